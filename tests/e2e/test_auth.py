"""Authentication and access (API.md "Conventions"): bearer tokens, the admin key,
`herald token`, and protected mode (no secret -> loopback only)."""

import subprocess

import pytest
import requests

from conftest import assert_problem, free_port, parse_count, run_cli, uid

OTHER_SECRET = "some-other-secret-0123456789abcdef"


def routes(obj, counter):
    """(method, path, body) for every counter route; settings PUT is admin-only."""
    return [
        ("PUT", f"/api/v1/counter/{obj}", b"tok"),
        ("GET", f"/api/v1/counter/{obj}", None),
        ("PUT", f"/api/v1/counters/{counter}/{obj}", b"tok"),
        ("GET", f"/api/v1/counters/{counter}/{obj}", None),
        ("POST", f"/api/v1/counters/{counter}/counts", b'{"objects": ["%s"]}' % obj.encode()),
    ]


def bad_credentials(server, tmp_path):
    other_secret = tmp_path / "other-secret"
    other_secret.write_text(OTHER_SECRET)
    r = run_cli("token", "alice", "--secret-file", str(other_secret))
    assert r.returncode == 0, r.stderr
    foreign = r.stdout.strip()
    user = server.token("alice")
    return {
        "no header": {},
        "garbage bearer": {"Authorization": "Bearer garbage"},
        "empty bearer": {"Authorization": "Bearer "},
        "bearer only": {"Authorization": "Bearer"},
        "basic scheme": {"Authorization": "Basic YWRtaW46YWRtaW4="},
        "admin key without scheme": {"Authorization": server.admin_key},
        "admin key truncated": {"Authorization": "Bearer " + server.admin_key[:-1]},
        "admin key extended": {"Authorization": "Bearer " + server.admin_key + "x"},
        "token under another secret": {"Authorization": "Bearer " + foreign},
        "user token truncated": {"Authorization": "Bearer " + user[:-2]},
        "user token tampered": {"Authorization": "Bearer " + user[:-1] + ("A" if user[-1] != "A" else "B")},
    }


def test_unauthenticated_requests_401(secure_server, tmp_path):
    srv = secure_server
    obj, counter = uid("obj"), uid("cnt")
    s = requests.Session()
    # Seed one count so we can see that nothing changes.
    r = s.put(f"{srv.url}/api/v1/counter/{obj}", data="seed", headers={"Authorization": f"Bearer {srv.admin_key}"})
    assert r.status_code == 200, r.text
    for name, hdrs in bad_credentials(srv, tmp_path).items():
        for method, path, body in routes(obj, counter) + [
                ("PUT", f"/api/v1/counters/{counter}", b'{"ttl_ms": 5000}'),
                ("GET", f"/api/v1/counters/{counter}", None)]:
            r = s.request(method, srv.url + path, data=body, headers=hdrs)
            assert r.status_code == 401, f"{name}: {method} {path} -> {r.status_code} {r.text[:200]}"
            assert_problem(r, 401)
    ok = {"Authorization": f"Bearer {srv.admin_key}"}
    r = s.get(f"{srv.url}/api/v1/counter/{obj}", headers=ok)
    assert parse_count(r) == 1, "a rejected (401) PUT changed the count"
    r = s.get(f"{srv.url}/api/v1/counters/{counter}/{obj}", headers=ok)
    assert parse_count(r) == 0


def test_401_has_www_authenticate(secure_server):
    r = requests.get(f"{secure_server.url}/api/v1/counter/{uid('o')}")
    assert r.status_code == 401
    assert r.headers.get("WWW-Authenticate", "").lower().startswith("bearer"), \
        f"401 without 'WWW-Authenticate: Bearer' (RFC 9110 11.6.1, RFC 6750): {dict(r.headers)}"


def test_user_token_can_count(secure_server):
    srv = secure_server
    obj, counter = uid("obj"), uid("cnt")
    s = srv.session(srv.token("alice"))
    for method, path, body in routes(obj, counter):
        r = s.request(method, srv.url + path, data=body)
        assert r.status_code == 200, f"user token: {method} {path} -> {r.status_code} {r.text[:200]}"
    assert srv.count(obj, session=s) == 1
    # Another user's token counts too (any valid token).
    s2 = srv.session(srv.token("bob"))
    assert srv.add(obj, "tok2", session=s2) == 2
    assert srv.counts(counter, [obj], session=s2) == {obj: 1}


def test_admin_key_can_do_everything(secure_server):
    srv = secure_server
    obj, counter = uid("obj"), uid("cnt")
    s = srv.session(srv.admin_key)
    for method, path, body in routes(obj, counter):
        r = s.request(method, srv.url + path, data=body)
        assert r.status_code == 200, f"admin: {method} {path} -> {r.status_code} {r.text[:200]}"
    got = srv.set_counter(counter, session=s, ttl_ms=90000, exact_limit=42)
    assert got["ttl_ms"] == 90000 and got["exact_limit"] == 42
    assert srv.get_counter(counter, session=s)["exact_limit"] == 42


def test_settings_need_admin(secure_server):
    srv = secure_server
    counter = uid("cnt")
    s = srv.session(srv.token("alice"))
    r = s.put(f"{srv.url}/api/v1/counters/{counter}", json={"ttl_ms": 5000, "exact_limit": 3})
    assert_problem(r, 403)
    admin = srv.session(srv.admin_key)
    got = srv.get_counter(counter, session=admin)
    assert got["exact_limit"] == 10000 and got["ttl_ms"] == 30 * 24 * 3600 * 1000, \
        f"a forbidden settings PUT changed the settings: {got}"
    # A user named like the admin is still not the admin.
    s = srv.session(srv.token("admin"))
    r = s.put(f"{srv.url}/api/v1/counters/{counter}", json={"ttl_ms": 5000})
    assert_problem(r, 403)


def test_public_endpoints(secure_server):
    for path in ["/healthz", "/metrics"]:
        r = requests.get(secure_server.url + path)
        assert r.status_code == 200, f"{path} without credentials: {r.status_code}"
        r = requests.get(secure_server.url + path, headers={"Authorization": "Bearer garbage"})
        assert r.status_code in (200, 401), path


def test_bearer_scheme_case_insensitive(secure_server):
    srv = secure_server
    obj = uid("obj")
    r = requests.put(f"{srv.url}/api/v1/counter/{obj}", data="t", headers={"Authorization": f"bearer {srv.admin_key}"})
    assert r.status_code == 200, f"'bearer' (lower case) rejected: {r.status_code} (RFC 9110 auth schemes are case-insensitive)"


def test_validation_after_auth(secure_server):
    """Unauthenticated bad input is 401, not 400 (nothing is revealed before auth)."""
    r = requests.put(f"{secure_server.url}/api/v1/counter/bad!id", data="t")
    assert r.status_code in (401, 400)
    r = requests.put(f"{secure_server.url}/api/v1/counter/bad!id", data="t",
                     headers={"Authorization": f"Bearer {secure_server.admin_key}"})
    assert_problem(r, 400, "object")


# -- herald token ----------------------------------------------------------------


def test_token_command(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("a-test-secret-of-32-bytes-length\n")
    r1 = run_cli("token", "alice", "--secret-file", str(secret))
    assert r1.returncode == 0, r1.stderr
    lines = r1.stdout.splitlines()
    assert len(lines) == 1 and lines[0].strip(), f"expected one line, got {r1.stdout!r}"
    tok = lines[0].strip()
    assert " " not in tok and len(tok) >= 16, tok
    r2 = run_cli("token", "alice", "--secret-file", str(secret))
    assert r2.stdout.strip() == tok, "herald token is not deterministic"
    r3 = run_cli("token", "bob", "--secret-file", str(secret))
    assert r3.returncode == 0 and r3.stdout.strip() != tok
    # The trailing newline of the secret file is not part of the secret.
    secret2 = tmp_path / "secret2"
    secret2.write_text("a-test-secret-of-32-bytes-length")
    r4 = run_cli("token", "alice", "--secret-file", str(secret2))
    assert r4.stdout.strip() == tok, "the trailing newline of the secret file changed the token"
    secret3 = tmp_path / "secret3"
    secret3.write_text("another-test-secret-of-32-bytes!")
    r5 = run_cli("token", "alice", "--secret-file", str(secret3))
    assert r5.returncode == 0 and r5.stdout.strip() != tok


def test_secret_length_boundary(tmp_path):
    ok = tmp_path / "s16"
    ok.write_text("0123456789abcdef\n")          # 16 bytes after the newline is stripped
    r = run_cli("token", "alice", "--secret-file", str(ok))
    assert r.returncode == 0, f"a 16-byte secret was refused: {r.stderr}"
    short = tmp_path / "s15"
    short.write_text("0123456789abcde\n")          # 15 bytes
    r = run_cli("token", "alice", "--secret-file", str(short))
    assert r.returncode != 0, "a 15-byte secret was accepted"


def test_token_command_errors(tmp_path):
    short = tmp_path / "short"
    short.write_text("tooshort\n")
    r = run_cli("token", "alice", "--secret-file", str(short))
    assert r.returncode != 0, "a secret under 16 bytes was accepted"
    assert r.stderr.strip(), "no error message"
    good = tmp_path / "good"
    good.write_text("x" * 32)
    r = run_cli("token", "bad user!", "--secret-file", str(good))
    assert r.returncode != 0, "an invalid user id got a token"
    r = run_cli("token", "alice")
    assert r.returncode != 0, "herald token without --secret-file succeeded"
    r = run_cli("token", "alice", "--secret-file", str(tmp_path / "missing"))
    assert r.returncode != 0


def test_token_from_cli_works_on_server(herald, backend, tmp_path):
    h = herald.new(backend, secret="cli-secret-" + "z" * 20)
    h.start()
    r = run_cli("token", "carol", "--secret-file", str(h.secret_file))
    tok = r.stdout.strip()
    obj = uid("obj")
    assert h.add(obj, "t", session=h.session(tok)) == 1
    # The admin key is the file's content without its trailing newline.
    assert h.add(obj, "t2", session=h.session("cli-secret-" + "z" * 20)) == 2


# -- protected mode ----------------------------------------------------------------


def run_expect_exit(cmd, timeout=20):
    """Run a serve command that must exit by itself; kill it and fail if it keeps running."""
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(cmd)} kept running (expected it to refuse to start); "
                    f"stdout {e.stdout!r} stderr {e.stderr!r}", pytrace=False)


def test_protected_mode_refuses_public_listen(herald, backend):
    h = herald.new(backend, listen_host="0.0.0.0")
    p = run_expect_exit(h.cmdline())
    assert p.returncode == 2, f"no secret + 0.0.0.0: exit {p.returncode} (expected 2)\nstdout {p.stdout}\nstderr {p.stderr}"
    assert "--secret-file" in p.stderr, f"the refusal does not mention --secret-file: {p.stderr!r}"
    assert "ready" not in p.stdout


def test_public_listen_with_secret_starts(herald, backend):
    h = herald.new(backend, listen_host="0.0.0.0", secret="public-secret-" + "q" * 20)
    h.start()
    r = requests.get(f"{h.url}/api/v1/counter/{uid('o')}")
    assert r.status_code == 401
    r = requests.get(f"{h.url}/api/v1/counter/{uid('o')}", headers={"Authorization": f"Bearer {h.secret}"})
    assert r.status_code == 200


def test_serve_refuses_short_secret(herald, backend, tmp_path):
    short = tmp_path / "short-secret"
    short.write_text("short\n")
    h = herald.new(backend, "--secret-file", str(short))
    p = run_expect_exit(h.cmdline())
    assert p.returncode != 0, "serve started with a secret under 16 bytes"
    assert "ready" not in p.stdout
