/* router.c — the routing table, validated and compiled into a segment trie.
 *
 * A pattern is a list of segments, each a literal ("counters") or a parameter
 * ("{counter}"). The trie has one node per distinct prefix of segments; a
 * node has literal children (a short array, scanned: a node of herald's
 * ~60-route table has at most ~15 children) and at most one parameter child,
 * shared by every route with a parameter at that position whatever its name
 * (names live in the compiled route). A node where patterns end holds one
 * route index per method.
 *
 * Matching walks the decoded segments depth-first, literal child first, so a
 * literal wins over a parameter at the same position; when a literal branch
 * leads nowhere (GET /stories/recent/ratings with routes /stories/recent and
 * /stories/{id}/ratings) the parameter branch is tried. Any non-empty segment
 * matches a parameter: the identifier rule is checked afterwards, so that a
 * bad identifier is a 400 naming it, not a 404. Empty segments ("/a//b",
 * the trailing one of "/a/b/") match nothing: such paths are not found.
 *
 * Invariants after router_build: the table is immutable, so matching needs no
 * lock; every SELF route's self_param names one of its parameters; no two
 * routes have the same method and the same segment shape.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "http/http_internal.h"

typedef struct rt_child {
    hr_slice seg; /* borrowed from the route's pattern */
    uint32_t node;
} rt_child;

struct rt_node {
    rt_child *lits; /* owned */
    uint32_t n_lits;
    int32_t param;           /* child for a parameter segment, or -1 */
    int32_t route[HM_COUNT]; /* route index per method, or -1 */
};

const char *const hr_method_names[HM_COUNT] = {"GET", "PUT", "POST", "DELETE", "PATCH"};

int hr_method_index(const char *m) {
    /* Called on every request: compare the first byte before strcmp. */
    switch (m[0]) {
    case 'G': return strcmp(m, "GET") == 0 ? HM_GET : -1;
    case 'P':
        if (strcmp(m, "PUT") == 0) return HM_PUT;
        if (strcmp(m, "POST") == 0) return HM_POST;
        return strcmp(m, "PATCH") == 0 ? HM_PATCH : -1;
    case 'D': return strcmp(m, "DELETE") == 0 ? HM_DELETE : -1;
    default: return -1;
    }
}

static uint32_t node_new(hr_router *r) {
    if (r->n_nodes == r->cap_nodes) {
        r->cap_nodes = r->cap_nodes ? r->cap_nodes * 2 : 32;
        r->nodes = hr_xrealloc(r->nodes, r->cap_nodes * sizeof *r->nodes);
    }
    rt_node *nd = &r->nodes[r->n_nodes];
    memset(nd, 0, sizeof *nd);
    nd->param = -1;
    for (int m = 0; m < HM_COUNT; m++)
        nd->route[m] = -1;
    return (uint32_t)r->n_nodes++;
}

/* The child of node ni for a literal segment, created if absent. */
static uint32_t lit_child(hr_router *r, uint32_t ni, hr_slice seg) {
    rt_node *nd = &r->nodes[ni];
    for (uint32_t i = 0; i < nd->n_lits; i++)
        if (hr_slice_eq(nd->lits[i].seg, seg)) return nd->lits[i].node;
    uint32_t c = node_new(r); /* may move r->nodes */
    nd = &r->nodes[ni];
    nd->lits = hr_xrealloc(nd->lits, (nd->n_lits + 1) * sizeof *nd->lits);
    nd->lits[nd->n_lits++] = (rt_child){seg, c};
    return c;
}

static uint32_t param_child(hr_router *r, uint32_t ni) {
    if (r->nodes[ni].param < 0) {
        uint32_t c = node_new(r);
        r->nodes[ni].param = (int32_t)c;
    }
    return (uint32_t)r->nodes[ni].param;
}

static bool name_byte(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Compile route i into the trie. Fills *out; returns 0 or HR_EINVAL with err
 * naming what is wrong. */
static int add_route(hr_router *r, size_t i, const hr_route *def, rt_route *out, hr_err *err) {
    const char *pat = def->pattern;
    /* Every message starts with which route is wrong. */
    char where[160];
    snprintf(where, sizeof where, "route %zu (%s %s)", i, def->method ? def->method : "(null)",
             pat ? pat : "(null)");

    out->def = def;
    out->self_param = -1;
    out->method = def->method ? hr_method_index(def->method) : -1;
    if (out->method < 0)
        return hr_err_set(err, HR_EINVAL, "%s: unknown method (GET, PUT, POST, DELETE, PATCH)", where);
    if (def->handler == NULL) return hr_err_set(err, HR_EINVAL, "%s: no handler", where);
    if (def->access < HR_ACCESS_PUBLIC || def->access > HR_ACCESS_ADMIN)
        return hr_err_set(err, HR_EINVAL, "%s: unknown access %d", where, (int)def->access);
    if (pat == NULL || pat[0] != '/')
        return hr_err_set(err, HR_EINVAL, "%s: pattern must start with '/'", where);

    uint32_t ni = 0; /* the root */
    unsigned seg = 0;
    const char *p = pat + 1;
    while (*p != '\0') { /* "/" itself has no segments: the root */
        const char *end = strchr(p, '/');
        if (end == NULL) end = p + strlen(p);
        size_t len = (size_t)(end - p);
        if (len == 0) return hr_err_set(err, HR_EINVAL, "%s: empty segment", where);
        if (seg == RT_SEGMENTS_MAX)
            return hr_err_set(err, HR_EINVAL, "%s: more than %d segments", where, RT_SEGMENTS_MAX);
        if (p[0] == '{') {
            if (len < 3 || p[len - 1] != '}')
                return hr_err_set(err, HR_EINVAL, "%s: a parameter is a whole segment {name}", where);
            for (size_t k = 1; k + 1 < len; k++)
                if (!name_byte(p[k]))
                    return hr_err_set(err, HR_EINVAL, "%s: parameter names are [A-Za-z0-9_]", where);
            if (out->n_params == RT_PARAMS_MAX)
                return hr_err_set(err, HR_EINVAL, "%s: more than %d parameters", where, RT_PARAMS_MAX);
            char *name = hr_xstrndup(p + 1, len - 2);
            for (unsigned k = 0; k < out->n_params; k++)
                if (strcmp(out->param_name[k], name) == 0) {
                    free(name);
                    return hr_err_set(err, HR_EINVAL, "%s: parameter {%s} appears twice", where,
                                      out->param_name[k]);
                }
            out->param_name[out->n_params] = name;
            out->param_seg[out->n_params++] = seg;
            ni = param_child(r, ni);
        } else {
            if (memchr(p, '{', len) || memchr(p, '}', len))
                return hr_err_set(err, HR_EINVAL, "%s: braces inside a literal segment", where);
            ni = lit_child(r, ni, hr_slice_of(p, len));
        }
        seg++;
        p = *end ? end + 1 : end;
        if (*end == '/' && *p == '\0') return hr_err_set(err, HR_EINVAL, "%s: trailing '/'", where);
    }

    if (def->access == HR_ACCESS_SELF) {
        for (unsigned k = 0; k < out->n_params && def->self_param; k++)
            if (strcmp(out->param_name[k], def->self_param) == 0) out->self_param = (int)k;
        if (out->self_param < 0)
            return hr_err_set(err, HR_EINVAL,
                              "%s: SELF access needs self_param naming a "
                              "parameter of the pattern",
                              where);
    }

    int32_t *slot = &r->nodes[ni].route[out->method];
    if (*slot >= 0)
        return hr_err_set(err, HR_EINVAL, "%s: same method and path shape as route %d (%s)", where,
                          (int)*slot, r->routes[*slot].def->pattern);
    *slot = (int32_t)i;
    return 0;
}

int router_build(hr_router *r, const hr_route *routes, size_t n, hr_err *err) {
    memset(r, 0, sizeof *r);
    if (routes == NULL && n > 0) return hr_err_set(err, HR_EINVAL, "routes is NULL");
    node_new(r); /* the root */
    r->routes = hr_xcalloc(n ? n : 1, sizeof *r->routes);
    r->n_routes = n;
    for (size_t i = 0; i < n; i++) {
        int rc = add_route(r, i, &routes[i], &r->routes[i], err);
        if (rc != 0) {
            router_free(r);
            return rc;
        }
    }
    return 0;
}

void router_free(hr_router *r) {
    for (size_t i = 0; i < r->n_nodes; i++)
        free(r->nodes[i].lits);
    free(r->nodes);
    for (size_t i = 0; i < r->n_routes; i++)
        for (unsigned k = 0; k < r->routes[i].n_params; k++)
            free(r->routes[i].param_name[k]);
    free(r->routes);
    memset(r, 0, sizeof *r);
}

static int walk(const hr_router *r, uint32_t ni, int method, const hr_slice *segs, size_t n,
                unsigned *allow) {
    const rt_node *nd = &r->nodes[ni];
    if (n == 0) {
        for (int m = 0; m < HM_COUNT; m++)
            if (nd->route[m] >= 0) *allow |= 1u << m;
        return method >= 0 ? nd->route[method] : -1;
    }
    if (segs[0].len == 0) return -1;
    for (uint32_t i = 0; i < nd->n_lits; i++) {
        if (!hr_slice_eq(nd->lits[i].seg, segs[0])) continue;
        int found = walk(r, nd->lits[i].node, method, segs + 1, n - 1, allow);
        if (found >= 0) return found;
        break; /* literals of one node are distinct */
    }
    if (nd->param >= 0) return walk(r, (uint32_t)nd->param, method, segs + 1, n - 1, allow);
    return -1;
}

int router_match(const hr_router *r, int method, const hr_slice *segs, size_t n_segs, unsigned *allow) {
    *allow = 0;
    if (r->n_nodes == 0) return -1;
    return walk(r, 0, method, segs, n_segs, allow);
}
