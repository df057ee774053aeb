/* rocks/pset_columns.c — member columns: the images of the most tested packed sets
 * turned on their side, one bit per (member, set), so that a test of many
 * members against many sets costs about one cache line per member, not one
 * per (member, set).
 *
 * WHY. A zipf-feed friends-reads tests its user's ~450 friends against the
 * reader sets of ~65 popular URLs: ~29,000 member tests, each a random read
 * in that set's image (rocks/pset_image.c), one or two cache lines from
 * memory, the query's largest cost. The same ~450 members are asked about
 * in every one of the 65 tests. Here each member has a row of bits, one per
 * column, and each column is one set's image: a batch finds the rows of its
 * members once (~450 random reads), and every test of those members after
 * that reads bits that are in the CPU's cache.
 *
 * WHAT. A table of rows, keyed by member (open addressing, linear probing;
 * the key slots apart from the bits, so a probe reads 8 bytes a slot), each
 * row PCOL_WORDS words of bits: PCOL_COLUMNS columns. Row 0 is member 0's.
 * A column is filled from one image (its set's key, version, chunking and
 * stamp: the same image always holds the same entries), at a time
 * filled_at: bit (member, column) is 1 when the member was in the image and
 * alive at filled_at. Expiry only removes members, so a 0 stays right; a 1
 * stays right until the member expires. The members that expire before
 * filled_at + PCOL_HORIZON_MS are listed in the column as exceptions, and
 * a test takes the expired ones out; past PCOL_EXC_MAX of them, the column
 * is valid only until the first unlisted one expires. Past its validity
 * the column is filled again. A test
 * uses a column only if it is of the very image the batch holds for the
 * set, so the image's record of chunks written since (rocks/pset_image.c)
 * applies to the column as it does to the image: rocks/pset.c searches the
 * members of those chunks in the chunks themselves, after either.
 *
 * WHICH TESTS. Only a test whose members another test of the same batch
 * asks about too (hr_pset_test shares their copy): a lone test would pay as
 * many random reads for its rows as the image costs, and fill rows and
 * columns with members and sets that are never tested together (a stories
 * member's seen set, tested once a query).
 *
 * WHICH SETS. Columns are a cache of PCOL_BUCKETS buckets of PCOL_WAYS,
 * by the set's key hash. A test whose set has no column in its bucket fills
 * one (at most PCOL_FILLS_PER_BATCH a batch): an empty way, else the least
 * recently used way, if unused for PCOL_IDLE_MS (so sets that are tested
 * all the time do not push each other out). A fill reads the image once:
 * per entry an unmix, a row lookup (inserting the member) and an atomic OR,
 * about the cost of building the image; all fills together read at most
 * PCOL_FILL_ENTRIES_PER_S entries a second (sets whose members expire
 * faster than a column lists would otherwise be filled again and again). A
 * set whose fill found the rows full is not tried again for PCOL_RETRY_MS.
 *
 * CONCURRENCY. A bucket's lock guards its columns' identities. A column
 * being filled is FILLING, and its generation is odd; a reader notes the
 * generation under the lock, reads bits and exceptions without it, then
 * checks the generation again (a sequence lock) and, if a fill started
 * meanwhile, answers from the image instead. Rows are inserted with a
 * compare-and-swap and never move or leave; nrows counts them, so a batch
 * that looked up its members' rows before a fill inserted one of them sees
 * the count change and looks the missing ones up again.
 *
 * MEMORY. The `columns` share of the store's memory (rocks/memory.h), when
 * it holds the fixed tables (pcols_size): PCOL_ROWS key slots and rows (2 MiB of keys, 32 MiB of
 * bits, from hr_table_calloc: huge pages, touched only as used), at most
 * 3/4 of them used (past that a fill fails and its set is tested from its
 * image), plus per column the rows it has set (4 bytes each, to clear them
 * at the next fill) and its exceptions. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "common/alloc.h"
#include "common/clock.h"
#include "store/rocks/pset.h"

#define PCOL_ROWS_LOG 18
#define PCOL_ROWS ((size_t)1 << PCOL_ROWS_LOG)
#define PCOL_ROWS_MAX (PCOL_ROWS / 4 * 3)
#define PCOL_WORDS 16 /* 128 bytes a row */
#define PCOL_COLUMNS (PCOL_WORDS * 64)
#define PCOL_WAYS 4
#define PCOL_BUCKETS (PCOL_COLUMNS / PCOL_WAYS)
#define PCOL_HORIZON_MS (10 * 60 * 1000)
#define PCOL_EXC_MAX 128
#define PCOL_IDLE_MS (60 * 1000)
#define PCOL_RETRY_MS (10 * 1000)
#define PCOL_KEY_MAX 96
#define PCOL_FILLS_PER_BATCH 1
#define PCOL_FILL_ENTRIES_PER_S 4000000 /* entries all fills may read in a second (a fraction of a core) */
#define NO_ROW UINT32_MAX
#define PREFETCH_AHEAD 8 /* members ahead whose key slot or row is asked of the CPU first */

/* EMPTY: free. FAILED: its set's last fill found the rows full; not
 * tried again for PCOL_RETRY_MS, and free for another set. */
enum { PC_EMPTY, PC_FILLING, PC_READY, PC_FAILED };

typedef struct pcol {
    /* under the bucket's lock */
    int state;
    unsigned bits;
    uint32_t klen, nexc;
    uint64_t key_hash, version, stamp;
    int64_t filled_at, valid_until, exc_soonest;
    unsigned char key[PCOL_KEY_MAX];
    _Atomic uint64_t gen;      /* odd while FILLING */
    _Atomic int64_t last_used; /* ms; refreshed at most once a second */
    /* touched only by the column's filler */
    uint32_t *rows_set;
    size_t nset, set_cap;
    /* read by tests between two reads of gen */
    _Atomic uint32_t exc_row[PCOL_EXC_MAX];
    _Atomic int64_t exc_exp[PCOL_EXC_MAX];
} pcol;

struct pcols {
    pthread_mutex_t locks[PCOL_BUCKETS];
    pcol cols[PCOL_COLUMNS];
    _Atomic uint64_t *keys; /* PCOL_ROWS; 0: free (slot 0 is member 0's row) */
    _Atomic uint64_t *rows; /* PCOL_ROWS x PCOL_WORDS */
    _Atomic uint32_t nrows;
    _Atomic uint64_t tests, fills;
    _Atomic int64_t budget_second, budget_used; /* entries filled in that second */
    uint64_t seed;
};

/* The columns' state of a batch (rx.pcol), in x->mem, made by its first
 * column test (members_shared): the columns the batch has filled; the
 * members its last column test asked about (an op's u64s), whether other
 * tests share them, and their rows once looked up, when nrows rows
 * existed. */
struct pcol_rx {
    size_t fills;
    const uint64_t *members;
    bool shared, looked_up;
    uint32_t *rows;
    size_t cap;
    uint32_t nrows;
};

/* ---- pset_mix's inverse --------------------------------------------------------- */

/* Undo pset_mix's steps in reverse order: a multiplication by an odd c
 * by one by c's inverse modulo 2^64 (the constants below; the unit test
 * checks them), a shift-xor z ^= z >> k by z ^= z >> k ^ z >> 2k (and
 * >> 3k... while below 64). */
uint64_t pset_unmix(uint64_t z) {
    z ^= z >> 31 ^ z >> 62;
    z *= UINT64_C(0x319642b2d24d8ec3); /* 0x94d049bb133111eb's inverse */
    z ^= z >> 27 ^ z >> 54;
    z *= UINT64_C(0x96de1b173f119089); /* 0xbf58476d1ce4e5b9's inverse */
    z ^= z >> 30 ^ z >> 60;
    return z;
}

/* ---- Rows ---------------------------------------------------------------------- */

static size_t row_home(const pcols *p, uint64_t member) {
    size_t i = (size_t)(pset_mix(member ^ p->seed) >> (64 - PCOL_ROWS_LOG));
    return i ? i : 1;
}

static size_t row_next(size_t i) {
    i = (i + 1) & (PCOL_ROWS - 1);
    return i ? i : 1;
}

static uint32_t row_find(const pcols *p, uint64_t member) {
    if (member == 0) return 0;
    for (size_t i = row_home(p, member);; i = row_next(i)) {
        uint64_t k = atomic_load_explicit(&p->keys[i], memory_order_relaxed);
        if (k == member) return (uint32_t)i;
        if (k == 0) return NO_ROW;
    }
}

static uint32_t row_insert(pcols *p, uint64_t member) {
    if (member == 0) return 0;
    for (size_t i = row_home(p, member);; i = row_next(i)) {
        uint64_t k = atomic_load_explicit(&p->keys[i], memory_order_relaxed);
        if (k == member) return (uint32_t)i;
        if (k != 0) continue;
        if (atomic_load_explicit(&p->nrows, memory_order_relaxed) >= PCOL_ROWS_MAX) return NO_ROW;
        if (atomic_compare_exchange_strong(&p->keys[i], &k, member)) {
            atomic_fetch_add(&p->nrows, 1);
            return (uint32_t)i;
        }
        if (k == member) return (uint32_t)i; /* another fill inserted it */
    }
}

static _Atomic uint64_t *row_word(const pcols *p, uint32_t row, uint32_t col) {
    return &p->rows[(size_t)row * PCOL_WORDS + col / 64];
}

/* ---- The store's columns ------------------------------------------------------------ */

pcols *pcols_new(void) {
    pcols *p = hr_xcalloc(1, sizeof *p);
    for (size_t i = 0; i < PCOL_BUCKETS; i++)
        pthread_mutex_init(&p->locks[i], NULL);
    p->keys = hr_table_calloc(PCOL_ROWS, sizeof *p->keys);
    p->rows = hr_table_calloc(PCOL_ROWS * PCOL_WORDS, sizeof *p->rows);
    p->seed = pset_mix(hr_mono_ns() ^ (uint64_t)(uintptr_t)p);
    return p;
}

void pcols_free(pcols *p) {
    if (p == NULL) return;
    for (size_t i = 0; i < PCOL_BUCKETS; i++)
        pthread_mutex_destroy(&p->locks[i]);
    for (size_t c = 0; c < PCOL_COLUMNS; c++)
        free(p->cols[c].rows_set);
    hr_table_free(p->keys, PCOL_ROWS, sizeof *p->keys);
    hr_table_free(p->rows, PCOL_ROWS * PCOL_WORDS, sizeof *p->rows);
    free(p);
}

void pcols_stats(const pcols *p, uint64_t *tests, uint64_t *fills, size_t *rows) {
    *tests = atomic_load(&p->tests);
    *fills = atomic_load(&p->fills);
    *rows = atomic_load(&p->nrows);
}

size_t pcols_size(void) {
    return PCOL_ROWS * (sizeof(uint64_t) + PCOL_WORDS * sizeof(uint64_t)) + sizeof(pcols);
}

size_t pcols_bytes(const pcols *p) {
    return atomic_load_explicit(&p->nrows, memory_order_relaxed) *
           (sizeof(uint64_t) + PCOL_WORDS * sizeof(uint64_t));
}

/* Whether column c (its bucket locked) is the image img of set key. */
static bool col_is(const pcol *c, uint64_t kh, hr_slice key, const rmeta *m, const pimg *img) {
    return c->state == PC_READY && c->key_hash == kh && c->klen == key.len && c->version == m->version &&
           c->bits == img->bits && c->stamp == img->stamp && memcmp(c->key, key.ptr, key.len) == 0;
}

/* The way of bucket b (locked) to fill for set key, or -1: the set's own
 * (stale, or failed) column, an empty one, or the least recently used idle
 * one. */
static int way_to_fill(pcols *p, size_t b, uint64_t kh, hr_slice key, int64_t now) {
    int best = -1;
    int64_t oldest = INT64_MAX;
    for (int w = 0; w < PCOL_WAYS; w++) {
        pcol *c = &p->cols[b * PCOL_WAYS + w];
        if (c->state == PC_FILLING) continue;
        if (c->state != PC_EMPTY && c->key_hash == kh && c->klen == key.len &&
            memcmp(c->key, key.ptr, key.len) == 0)
            return w;
        if (c->state == PC_EMPTY || c->state == PC_FAILED) {
            if (oldest > INT64_MIN) best = w, oldest = INT64_MIN;
            continue;
        }
        int64_t used = atomic_load_explicit(&c->last_used, memory_order_relaxed);
        if (now - used >= PCOL_IDLE_MS && used < oldest) best = w, oldest = used;
    }
    return best;
}

typedef struct soon {
    int64_t expire_at;
    uint32_t row;
} soon;

static int by_expiry(const void *a, const void *b) {
    int64_t x = ((const soon *)a)->expire_at, y = ((const soon *)b)->expire_at;
    return (x > y) - (x < y);
}

/* What a fill found: until when the column answers, and its exceptions. */
typedef struct filled {
    int64_t valid_until, exc_soonest;
    uint32_t nexc;
} filled;

/* Fill column col (FILLING, owned by this thread) from img of a set whose
 * hashes are pset_mix(member ^ seed), at now: false (its bits may be half
 * set; the next fill clears them) if the rows are full. The members that
 * expire within the horizon are the exceptions; past PCOL_EXC_MAX of them,
 * the column is valid only until the first of the others expires. */
static bool fill(pcols *p, uint32_t col, const pimg *img, uint64_t seed, int64_t now, filled *f) {
    pcol *c = &p->cols[col];
    uint64_t bit = UINT64_C(1) << (col % 64);
    for (size_t i = 0; i < c->nset; i++)
        atomic_fetch_and_explicit(row_word(p, c->rows_set[i], col), ~bit, memory_order_relaxed);
    c->nset = 0;
    soon *soons = NULL;
    size_t nsoon = 0, soon_cap = 0;
    bool ok = true;
    for (uint64_t s = 0; s < img->nall && ok; s++) {
        uint64_t h;
        int64_t expire_at;
        if (!pimg_entry(img, s, &h, &expire_at)) continue;
        if (expire_at != 0 && now >= expire_at) continue; /* not a member at now */
        uint32_t row = row_insert(p, pset_unmix(h) ^ seed);
        if (row == NO_ROW) {
            ok = false;
            break;
        }
        if (c->nset == c->set_cap) {
            c->set_cap = c->set_cap ? 2 * c->set_cap : 1024;
            c->rows_set = hr_xrealloc(c->rows_set, c->set_cap * sizeof *c->rows_set);
        }
        c->rows_set[c->nset++] = row;
        atomic_fetch_or_explicit(row_word(p, row, col), bit, memory_order_relaxed);
        if (expire_at != 0 && expire_at - now < PCOL_HORIZON_MS) {
            if (nsoon == soon_cap) {
                soon_cap = soon_cap ? 2 * soon_cap : 64;
                soons = hr_xrealloc(soons, soon_cap * sizeof *soons);
            }
            soons[nsoon++] = (soon){expire_at, row};
        }
    }
    f->valid_until = now + PCOL_HORIZON_MS;
    if (nsoon > PCOL_EXC_MAX) {
        qsort(soons, nsoon, sizeof *soons, by_expiry);
        f->valid_until = soons[PCOL_EXC_MAX].expire_at;
        nsoon = PCOL_EXC_MAX;
    }
    f->nexc = (uint32_t)nsoon;
    f->exc_soonest = INT64_MAX;
    for (size_t i = 0; i < nsoon; i++) {
        atomic_store_explicit(&c->exc_row[i], soons[i].row, memory_order_relaxed);
        atomic_store_explicit(&c->exc_exp[i], soons[i].expire_at, memory_order_relaxed);
        if (soons[i].expire_at < f->exc_soonest) f->exc_soonest = soons[i].expire_at;
    }
    free(soons);
    return ok;
}

/* Whether a fill of n entries fits in this second's budget (the first fill
 * of a second always does). */
static bool budget_take(pcols *p, uint64_t n, int64_t now) {
    int64_t second = now / 1000;
    if (atomic_load_explicit(&p->budget_second, memory_order_relaxed) != second) {
        atomic_store_explicit(&p->budget_used, 0, memory_order_relaxed); /* racy, and only a budget */
        atomic_store_explicit(&p->budget_second, second, memory_order_relaxed);
    }
    int64_t used = atomic_fetch_add_explicit(&p->budget_used, (int64_t)n, memory_order_relaxed);
    return used == 0 || used + (int64_t)n <= PCOL_FILL_ENTRIES_PER_S;
}

/* What a test needs of its column, copied under the bucket's lock. */
typedef struct colview {
    uint32_t col, nexc;
    uint64_t gen;
    int64_t exc_soonest;
} colview;

/* The column of img (set key of metadata m) for a batch at now, into v;
 * filled first if x may fill one. False: none. After members_shared. */
static bool column_of(rx *x, pcols *p, hr_slice key, const rmeta *m, const pimg *img, colview *v) {
    if (key.len > PCOL_KEY_MAX) return false;
    uint64_t kh = XXH3_64bits(key.ptr, key.len);
    size_t b = (size_t)(kh % PCOL_BUCKETS);
    int64_t now = x->now;
    pthread_mutex_lock(&p->locks[b]);
    bool may_fill = x->pcol->fills < PCOL_FILLS_PER_BATCH;
    for (int w = 0; w < PCOL_WAYS; w++) {
        pcol *c = &p->cols[b * PCOL_WAYS + w];
        if (c->state == PC_EMPTY || c->key_hash != kh || c->klen != key.len ||
            memcmp(c->key, key.ptr, key.len))
            continue; /* another set's */
        bool of_img = col_is(c, kh, key, m, img);
        if (c->state == PC_FILLING || (c->state == PC_FAILED && now - c->filled_at < PCOL_RETRY_MS) ||
            (of_img && now < c->filled_at))
            may_fill = false; /* being filled; failed a moment ago; filled by a batch that began after x */
        if (!of_img || now < c->filled_at || now >= c->valid_until) continue;
        *v = (colview){(uint32_t)(b * PCOL_WAYS + w), c->nexc, atomic_load(&c->gen), c->exc_soonest};
        if (now - atomic_load_explicit(&c->last_used, memory_order_relaxed) >= 1000)
            atomic_store_explicit(&c->last_used, now, memory_order_relaxed);
        pthread_mutex_unlock(&p->locks[b]);
        return true;
    }
    int w = may_fill ? way_to_fill(p, b, kh, key, now) : -1;
    if (w >= 0 && !budget_take(p, img->nall, now)) w = -1;
    if (w < 0) {
        pthread_mutex_unlock(&p->locks[b]);
        return false;
    }
    uint32_t col = (uint32_t)(b * PCOL_WAYS + (size_t)w);
    pcol *c = &p->cols[col];
    c->state = PC_FILLING; /* and the set's from now on, so no other batch fills one for it */
    c->key_hash = kh;
    c->klen = (uint32_t)key.len;
    memcpy(c->key, key.ptr, key.len);
    atomic_store_explicit(&c->gen, atomic_load(&c->gen) + 1, memory_order_relaxed);
    pthread_mutex_unlock(&p->locks[b]);
    atomic_thread_fence(memory_order_release); /* the odd generation before any bit changes */
    x->pcol->fills++;

    filled f = {0};
    bool ok = fill(p, col, img, m->seed, now, &f);
    atomic_fetch_add(&p->fills, 1);

    pthread_mutex_lock(&p->locks[b]);
    c->state = ok ? PC_READY : PC_FAILED;
    c->version = m->version;
    c->bits = img->bits;
    c->stamp = img->stamp;
    c->filled_at = now;
    c->valid_until = f.valid_until;
    c->exc_soonest = f.exc_soonest;
    c->nexc = f.nexc;
    atomic_store_explicit(&c->last_used, now, memory_order_relaxed);
    atomic_store_explicit(&c->gen, atomic_load(&c->gen) + 1, memory_order_release);
    *v = (colview){col, c->nexc, atomic_load(&c->gen), c->exc_soonest};
    pthread_mutex_unlock(&p->locks[b]);
    return ok;
}

/* Whether another test of the batch asks about op's members: the same
 * copy, as hr_pset_test shares it. It shares a copy only with the test
 * before, so the tests that share one are consecutive among the batch's
 * tests: the nearest test on either side tells. A lone test gains nothing
 * from a column (its rows cost as many random reads as the image), and
 * would spend the rows and columns on members and sets that are not tested
 * together. */
static bool members_shared(rx *x, const hr_op *op) {
    struct pcol_rx *t = RX_PART(x, pcol);
    if (t->members == op->u64s) return t->shared;
    const hr_op *ops = x->b->ops;
    size_t at = (size_t)(op - ops);
    bool shared = false;
    for (size_t i = at; i-- > 0;)
        if (ops[i].type == HR_OP_PSET_TEST) {
            shared = ops[i].u64s == op->u64s;
            break;
        }
    for (size_t i = at + 1; i < x->b->len && !shared; i++)
        if (ops[i].type == HR_OP_PSET_TEST) {
            shared = ops[i].u64s == op->u64s;
            break;
        }
    t->members = op->u64s;
    t->shared = shared;
    t->looked_up = false;
    return shared;
}

/* The rows of op's members (members_shared(x, op) first), looked up once a
 * batch, and again for those missing when rows were inserted since. */
static const uint32_t *rows_of(rx *x, pcols *p, const hr_op *op) {
    struct pcol_rx *t = x->pcol;
    size_t n = op->n_u64s;
    uint32_t nrows = atomic_load(&p->nrows);
    if (!t->looked_up) {
        if (t->cap < n) {
            t->rows = hr_arena_alloc(&x->mem, n * sizeof *t->rows);
            t->cap = n;
        }
        for (size_t i = 0; i < n; i++) {
            if (i + PREFETCH_AHEAD < n)
                __builtin_prefetch(&p->keys[row_home(p, op->u64s[i + PREFETCH_AHEAD])]);
            t->rows[i] = row_find(p, op->u64s[i]);
        }
        t->looked_up = true;
        t->nrows = nrows;
    } else if (t->nrows != nrows) {
        for (size_t i = 0; i < n; i++)
            if (t->rows[i] == NO_ROW) t->rows[i] = row_find(p, op->u64s[i]);
        t->nrows = nrows;
    }
    return t->rows;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

bool pcols_test(rx *x, const hr_op *op, const rmeta *m, const pimg *img, unsigned char *out, int64_t *count) {
    pcols *p = x->s->pcols;
    colview v;
    if (p == NULL || !members_shared(x, op) || !column_of(x, p, op->key, m, img, &v)) return false;
    const uint32_t *rows = rows_of(x, p, op);
    size_t n = op->n_u64s;
    uint32_t shift = v.col % 64;
    int64_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + PREFETCH_AHEAD < n && rows[i + PREFETCH_AHEAD] != NO_ROW)
            __builtin_prefetch(row_word(p, rows[i + PREFETCH_AHEAD], v.col));
        unsigned char in = 0;
        if (rows[i] != NO_ROW)
            in = (unsigned char)(atomic_load_explicit(row_word(p, rows[i], v.col), memory_order_relaxed) >>
                                     shift &
                                 1);
        out[i] = in;
        hits += in;
    }
    if (v.nexc > 0 && x->now >= v.exc_soonest) {
        /* members that expired since the fill: each hit whose row is one of theirs is out */
        const pcol *c = &p->cols[v.col];
        uint32_t gone[PCOL_EXC_MAX];
        size_t ngone = 0;
        for (uint32_t e = 0; e < v.nexc; e++)
            if (x->now >= atomic_load_explicit(&c->exc_exp[e], memory_order_relaxed))
                gone[ngone++] = atomic_load_explicit(&c->exc_row[e], memory_order_relaxed);
        qsort(gone, ngone, sizeof *gone, cmp_u32);
        for (size_t i = 0; i < n && ngone; i++)
            if (out[i] && bsearch(&rows[i], gone, ngone, sizeof *gone, cmp_u32)) {
                out[i] = 0;
                hits--;
            }
    }
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&p->cols[v.col].gen, memory_order_relaxed) != v.gen) {
        memset(out, 0, n); /* a fill began meanwhile: the caller asks the image */
        return false;
    }
    atomic_fetch_add_explicit(&p->tests, 1, memory_order_relaxed);
    *count = hits;
    return true;
}
