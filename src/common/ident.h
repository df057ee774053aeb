/* ident.h — the identifier rule of API.md: users, groups, objects,
 * counters, members are 1..128 bytes of [A-Za-z0-9._:@~-]. Checked by the
 * HTTP layer on every path parameter and by core/ on every identifier it is
 * handed, so no key the store sees holds '{', '}', '/' or a control byte. */
#ifndef HR_IDENT_H
#define HR_IDENT_H

#include <stdbool.h>

#include "common/slice.h"

#define HR_IDENT_MAX 128

bool hr_ident_valid(hr_slice s);

#endif
