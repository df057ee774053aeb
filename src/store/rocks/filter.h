/* filter.h — the compaction filters and the HLL merge operator (filter.c). */
#ifndef HR_ROCKS_FILTER_H
#define HR_ROCKS_FILTER_H

#include "store/rocks/engine.h"

rocksdb_compactionfilterfactory_t *rocks_meta_filter_factory(rocks_store *s);
rocksdb_compactionfilterfactory_t *rocks_sub_filter_factory(rocks_store *s, int cf);
/* Drops time-list entries expired for longer than the grace period, and the
 * index entries of sets of times that are gone (rocks_ztl.c). */
rocksdb_compactionfilterfactory_t *rocks_tl_filter_factory(rocks_store *s);
rocksdb_mergeoperator_t *rocks_hll_merge_operator(void);

#endif
