/* profiles.h — users' and groups' profiles and the application's objects,
 * and the enrichment of feed pages with them (API.md "Profiles, objects and
 * enrichment"; seed 001's "fill in member and group info").
 *
 * Each is one JSON object stored as a value, as the client sent it (compact):
 *
 *   {NSu/UID}/profile   value   the user's profile
 *   {NSg/GID}/profile   value   the group's profile
 *   {NSo/OID}           value   the object OID (e.g. "thread:7369603")
 *
 * Enriching a page is one multi-get of every actor's profile, every
 * "group:" target's profile and every object named by an activity's object
 * or target, each read once: one store round trip whatever the page's size.
 * Nothing is copied into activities, so an update shows in the next page. */
#ifndef HR_PROFILES_H
#define HR_PROFILES_H

#include <stddef.h>

#include "common/arena.h"
#include "common/err.h"
#include "common/slice.h"
#include "core/activity.h"
#include "store/store.h"

#define HR_PROFILE_MAX 4096 /* bytes of a user's or group's profile, as compact JSON */
#define HR_OBJECT_MAX 16384 /* bytes of an object, as compact JSON */

typedef enum { HR_PROFILE_USER, HR_PROFILE_GROUP, HR_PROFILE_OBJECT } hr_profile_kind;

typedef struct hr_profiles hr_profiles;

hr_profiles *hr_profiles_new(hr_store *store, const char *ns);
void hr_profiles_free(hr_profiles *p);

/* Store json (a JSON object as compact text: the caller checked its form)
 * as id's profile or object. HR_EINVAL naming the id for one that is not an
 * identifier; HR_ETOOBIG over HR_PROFILE_MAX / HR_OBJECT_MAX. */
int hr_profiles_put(hr_profiles *p, hr_profile_kind kind, hr_slice id, hr_slice json, hr_err *err);
/* The stored JSON text (copied into a); HR_ENOTFOUND when there is none. */
int hr_profiles_get(hr_profiles *p, hr_profile_kind kind, hr_slice id, hr_arena *a, hr_slice *json,
                    hr_err *err);
/* Delete it; HR_ENOTFOUND when there was none. */
int hr_profiles_delete(hr_profiles *p, hr_profile_kind kind, hr_slice id, hr_err *err);

/* What an enriched page includes: per kind, the ids that have something
 * stored and their JSON, in the order first named. */
typedef struct hr_included {
    struct {
        hr_slice *ids, *json;
        size_t n;
    } of[3]; /* indexed by hr_profile_kind */
} hr_included;

/* The profiles and objects the n activities name (see above), in one
 * round trip; everything copied into a. */
int hr_profiles_include(hr_profiles *p, const hr_activity *items, size_t n, hr_arena *a, hr_included *out,
                        hr_err *err);

#endif
