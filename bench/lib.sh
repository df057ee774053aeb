# bench/lib.sh — helpers shared by bench/run.sh and bench/stories.sh.
# Sourced, not run. Expects the caller's globals: TMP (scratch dir), PY,
# DUR, WARMUP, WRK_THREADS (wrk settings), COMMANDS and ROWS (arrays the
# results are built from), and a log function.

# A command line as it can be pasted back into a shell.
quote_cmd() { local out; out=$(printf '%q ' "$@"); echo "${out% }"; }

tail_log() { [ -f "$1" ] && { echo "---- $1 (last lines) ----" >&2; tail -n 30 "$1" >&2; }; return 0; }

free_port() {
    "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

stop_pid() {
    local pid=$1
    kill -TERM "$pid" 2>/dev/null || return 0
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null || true
}

to_ms() { # wrk latency like 512.00us, 1.23ms, 1.02s -> milliseconds
    awk -v v="$1" 'BEGIN {
        n = v + 0
        if (v ~ /us$/) n = n / 1000; else if (v ~ /ms$/) n = n; else if (v ~ /m$/) n = n * 60000; else if (v ~ /s$/) n = n * 1000
        printf "%.3f", n }'
}

# run_wrk NAME CONNECTIONS SCRIPT URL: warm up, then measure; appends a row.
run_wrk() {
    local name=$1 conns=$2 script=$3 url=$4 out
    out=$TMP/wrk-$(echo "$1" | tr -c 'a-zA-Z0-9\n' '-').txt
    local sarg=() threads=$WRK_THREADS
    [ "$conns" -lt "$threads" ] && threads=$conns
    [ -n "$script" ] && sarg=(-s "$script")
    if [ "$WARMUP" -gt 0 ]; then
        wrk -t"$threads" -c"$conns" -d"${WARMUP}s" "${sarg[@]}" "$url" >/dev/null 2>&1 || true
    fi
    local cmd=(wrk -t"$threads" -c"$conns" -d"${DUR}s" --latency "${sarg[@]}" "$url")
    COMMANDS+=("$(quote_cmd "${cmd[@]}")")
    log "$name: ${cmd[*]}"
    "${cmd[@]}" >"$out" 2>&1 || { cat "$out" >&2; die "wrk failed for $name"; }
    local rps p50 p99 non2xx sockerr
    rps=$(awk '/^Requests\/sec:/ {printf "%.0f", $2}' "$out")
    p50=$(awk '/^ +50%/ {print $2}' "$out")
    p99=$(awk '/^ +99%/ {print $2}' "$out")
    non2xx=$(awk '/Non-2xx or 3xx responses:/ {print $NF}' "$out")
    sockerr=$(awk '/Socket errors:/ {gsub(",", ""); print $4+$6+$8+$10}' "$out")
    [ -n "$rps" ] && [ -n "$p50" ] && [ -n "$p99" ] || { cat "$out" >&2; die "could not parse wrk's output for $name"; }
    local errs=$(( ${non2xx:-0} + ${sockerr:-0} ))
    ROWS+=("$name|$rps|$(to_ms "$p50")|$(to_ms "$p99")|$errs")
    log "$name: $rps req/s, p50 $p50, p99 $p99, errors $errs"
    [ "${non2xx:-0}" -gt 0 ] && log "WARNING: $name: $non2xx non-2xx answers"
    return 0
}
