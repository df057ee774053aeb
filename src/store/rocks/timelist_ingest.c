/* rocks/timelist_ingest.c — bulk time-list adds (store.h, hr_tlbulk) written as one
 * sorted table file.
 *
 * WHY. Every key that goes through the memtable costs a node in it, a
 * place in the sorted copy a flush makes of the hashed memtable, and a
 * share of the WAL, and no tuning of the memtable took the fan-out path far
 * past that cost. A fan-out writes millions of entries that nothing reads by
 * key and that need no atomicity with anything else. Sorted in memory and
 * handed to RocksDB as a table file (IngestExternalFile), the same entries
 * skip the memtable, the WAL and the flush, and drain far faster
 * (bench/micro/ingest_micro.c; docs/DESIGN.md, "Measured decisions").
 *
 * HOW. The adds' keys are encoded as op_tladd would write them (rocks/timelist.c),
 * sorted, written with an SstFileWriter that has the time lists' own options
 * (so the file has the same prefix blooms and compression as a flushed
 * one), and ingested into the time lists' column family. RocksDB gives the
 * file a sequence number newer than every write before it, so its entries
 * win over older writes of the same keys, and a write after it wins over
 * them, as for any batch. The ingestion first flushes the memtable when its
 * keys overlap the file's (they do: a file spans every list), which is why
 * a file pays only when it is big (tl_file_min). The file and the
 * manifest entry are synced before the ingestion returns, so an
 * acknowledged bulk batch survives kill -9 as a WAL-logged one does.
 *
 * KEPT LISTS. A list kept in memory (rocks/timelist_cache.c) is kept current by
 * the batches that write it; a file would bypass that. So the adds to kept
 * lists are left out of the file and written as usual batches after it. The
 * gate is held across the ingestion: no list starts being kept meanwhile
 * (a list registered after the ingestion loads the file's entries from the
 * DB; one registered before it is kept, so its adds were left out).
 *
 * NOT ATOMIC. A failure after the file was ingested and before the kept
 * lists' adds were written leaves the file's adds applied (store.h allows
 * it: adds are idempotent, the caller writes them again).
 *
 * Table files are written in DIR/ingest/ and moved (hard-linked) into the DB
 * by the ingestion; a file left there by a crash before its ingestion is
 * deleted at the next open (rocks_ingest_open). */
#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/log.h"
#include "store/rocks/timelist.h"

/* Below this many adds (unless the URI's file_min says, rocks/memory.h) the
 * memtable is cheaper: each ingestion flushes the time lists' memtable, and
 * a small file is one more level-0 table that reads look at until it is
 * compacted. */
#define INGEST_MIN_ADDS 50000

int rocks_ingest_open(rocks_store *s, const char *path, size_t file_min, hr_err *err) {
    s->tl_file_min = file_min ? file_min : INGEST_MIN_ADDS;
    size_t n = strlen(path) + sizeof "/ingest";
    s->ingest_dir = hr_xmalloc(n);
    snprintf(s->ingest_dir, n, "%s/ingest", path);
    if (mkdir(s->ingest_dir, 0755) != 0 && errno != EEXIST)
        return hr_err_set(err, HR_EIO, "rocksdb: cannot create %s: %s", s->ingest_dir, strerror(errno));
    DIR *d = opendir(s->ingest_dir);
    if (d == NULL)
        return hr_err_set(err, HR_EIO, "rocksdb: cannot read %s: %s", s->ingest_dir, strerror(errno));
    hr_buf f = HR_BUF_INIT;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        size_t len = strlen(e->d_name);
        if (len < 5 || strcmp(e->d_name + len - 4, ".sst") != 0) continue;
        hr_buf_clear(&f);
        hr_buf_append_str(&f, s->ingest_dir);
        hr_buf_append_byte(&f, '/');
        hr_buf_append_str(&f, e->d_name);
        if (unlink(f.data) == 0)
            hr_info("rocksdb: removed %s, written but not ingested before a stop", f.data);
    }
    closedir(d);
    hr_buf_free(&f);
    return HR_OK;
}

void rocks_ingest_close(rocks_store *s) {
    if (s->tl_file_options) rocksdb_options_destroy(s->tl_file_options);
    free(s->ingest_dir);
}

/* One add of the file: its key at off in the keys buffer. The list hash
 * (the key's first 8 bytes) and the time that follows the list (u64, in
 * byte order) are copied here, so that most comparisons of the sort touch
 * no key. */
typedef struct fentry {
    uint64_t hash, time;
    size_t off;
    uint32_t len, plen; /* the key's length; its list prefix's (rocks/timelist.c) */
    int64_t expire_at;
} fentry;

/* Key order: by list hash (integers), then, within one list, by time and
 * the member's bytes; two lists of one hash (a collision) by whole keys. */
static int key_order(const fentry *x, const fentry *y, const char *keys) {
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    if (x->plen == y->plen && memcmp(keys + x->off, keys + y->off, x->plen) == 0) {
        if (x->time != y->time) return x->time < y->time ? -1 : 1;
        return hr_slice_cmp(hr_slice_of(keys + x->off + x->plen, x->len - x->plen),
                            hr_slice_of(keys + y->off + y->plen, y->len - y->plen));
    }
    return hr_slice_cmp(hr_slice_of(keys + x->off, x->len), hr_slice_of(keys + y->off, y->len));
}

static int key_order_r(const void *a, const void *b, void *keys) {
    return key_order(a, b, keys);
}

#define SORT_BUCKET_BITS 16
#define SORT_INSERTION_MAX 32

/* Sort `in` into `out` in key order. List hashes are XXH3, uniform, so the
 * entries are first spread over 2^16 buckets by the hash's top bits (one
 * pass to count, one to move), ~15 a bucket for a gather of a million;
 * each bucket is then sorted by insertion, or by qsort when one list took
 * many adds. A qsort of the whole array (glibc's merge sort, with a
 * buffer of its own) showed in a fan-out's profile, its comparisons spread
 * over 20 merge passes. */
static void sort_entries(const fentry *in, fentry *out, size_t n, const char *keys) {
    const size_t buckets = (size_t)1 << SORT_BUCKET_BITS;
    size_t *end = hr_xcalloc(buckets, sizeof *end); /* counts, then where each bucket ends */
    for (size_t i = 0; i < n; i++)
        end[in[i].hash >> (64 - SORT_BUCKET_BITS)]++;
    for (size_t b = 0, at = 0; b < buckets; b++) {
        at += end[b];
        end[b] = at - end[b]; /* its start, moved to its end as it fills */
    }
    for (size_t i = 0; i < n; i++)
        out[end[in[i].hash >> (64 - SORT_BUCKET_BITS)]++] = in[i];
    for (size_t b = 0, start = 0; b < buckets; start = end[b++]) {
        fentry *e = out + start;
        size_t len = end[b] - start;
        if (len > SORT_INSERTION_MAX) {
            qsort_r(e, len, sizeof *e, key_order_r, (void *)keys);
            continue;
        }
        for (size_t i = 1; i < len; i++) {
            fentry x = e[i];
            size_t j = i;
            for (; j > 0 && key_order(&e[j - 1], &x, keys) > 0; j--)
                e[j] = e[j - 1];
            e[j] = x;
        }
    }
    free(end);
}

/* Write entries (sorted; equal keys next to each other, the last one
 * kept) into a new table file, ingest it. */
static int write_and_ingest(rocks_store *s, const fentry *e, size_t n, const char *keys, hr_err *err) {
    static _Atomic uint64_t serial;
    char path[4096];
    snprintf(path, sizeof path, "%s/%ld-%llu.sst", s->ingest_dir, (long)getpid(),
             (unsigned long long)atomic_fetch_add(&serial, 1));
    rocksdb_envoptions_t *eo = rocksdb_envoptions_create();
    rocksdb_sstfilewriter_t *w = rocksdb_sstfilewriter_create(eo, s->tl_file_options);
    char *errptr = NULL;
    size_t written = 0;
    rocksdb_sstfilewriter_open(w, path, &errptr);
    for (size_t i = 0; i < n && errptr == NULL; i++) {
        if (i + 1 < n && e[i + 1].hash == e[i].hash && e[i + 1].len == e[i].len &&
            memcmp(keys + e[i + 1].off, keys + e[i].off, e[i].len) == 0)
            continue; /* the same entry twice (a follower who is also a member) */
        char v[8];
        hr_store_u64be(v, (uint64_t)e[i].expire_at);
        rocksdb_sstfilewriter_put(w, keys + e[i].off, e[i].len, v, sizeof v, &errptr);
        written++;
    }
    if (errptr == NULL) rocksdb_sstfilewriter_finish(w, &errptr);
    rocksdb_sstfilewriter_destroy(w);
    rocksdb_envoptions_destroy(eo);
    int rc = HR_OK;
    if (errptr == NULL) {
        rocksdb_ingestexternalfileoptions_t *io = rocksdb_ingestexternalfileoptions_create();
        rocksdb_ingestexternalfileoptions_set_move_files(io, 1);
        const char *files[1] = {path};
        rocksdb_ingest_external_file_cf(s->db, s->cf[CF_TL], files, 1, io, &errptr);
        rocksdb_ingestexternalfileoptions_destroy(io);
        if (errptr == NULL) hr_debug("rocksdb: %zu time-list adds ingested as one table file", written);
    }
    if (errptr) {
        rc = hr_err_set(err, HR_EIO, "rocksdb: writing %zu time-list adds as a table file: %s", n, errptr);
        rocksdb_free(errptr);
    }
    unlink(path); /* moved into the DB when ingested; else written in vain */
    return rc;
}

int rocks_ingest_write(hr_store *hs, hr_tlbulk *w, hr_err *err) {
    rocks_store *s = (rocks_store *)hs;
    /* A burst of files gets room in level 0 (tl_bulk_mode); a write too
     * small for a file (a fan-out that caught up, or had nothing left to
     * write) ends it, and level 0 is compacted as usual again. */
    tl_bulk_mode(s, w->n >= s->tl_file_min);
    if (w->n < s->tl_file_min) return hr_tlbulk_write_batches(w, 0, w->n, err);
    bool gated = tlcache_lists(s->tlc) > 0;
    if (gated) tlcache_gate_enter(s->tlc);
    /* The keys, the entries and their sorted copy, in w's scratch memory. */
    hr_buf *keys = &w->scratch[0], *unsorted = &w->scratch[1], *sorted = &w->scratch[2];
    hr_buf_clear(keys);
    hr_buf_clear(unsorted);
    hr_buf_clear(sorted);
    hr_buf_reserve(unsorted, w->n * sizeof(fentry));
    hr_buf_reserve(sorted, w->n * sizeof(fentry));
    fentry *e = (fentry *)unsorted->data;
    size_t n = 0, n_kept = 0;
    for (size_t i = 0; i < w->n; i++) {
        const hr_tlbulk_entry *a = &w->e[i];
        if (gated && tlcache_find(s->tlc, hr_tlbulk_list(w, a)) != NULL) {
            w->e[n_kept++] = *a; /* written after the file: see KEPT LISTS (i >= n_kept: a is read already) */
            continue;
        }
        size_t off = keys->len, plen = tl_list_prefix_len(hr_tlbulk_list(w, a));
        tl_key(keys, hr_tlbulk_list(w, a), a->time_ms, hr_tlbulk_member(w, a));
        e[n++] = (fentry){.hash = load_u64(keys->data + off),
                          .time = load_u64(keys->data + off + plen),
                          .off = off,
                          .len = (uint32_t)(keys->len - off),
                          .plen = (uint32_t)plen,
                          .expire_at = a->expire_at_ms};
    }
    fentry *in_order = (fentry *)sorted->data;
    if (n) sort_entries(e, in_order, n, keys->data);
    int rc = n ? write_and_ingest(s, in_order, n, keys->data, err) : HR_OK;
    if (gated) tlcache_gate_leave(s->tlc);
    if (rc == HR_OK && n_kept) rc = hr_tlbulk_write_batches(w, 0, n_kept, err);
    return rc;
}
