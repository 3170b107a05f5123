/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private to src/values/ (jsonpatch.c): look-ups in a cJSON tree that is being edited, in time that
 * does not grow with the width of the containers. cJSON keeps members and elements in lists, so
 * finding a member by name or an element by position walks the list; a patch of many operations
 * into one wide object or long array would walk it again for each (quadratic in the patch).
 *
 * Objects of at least MEMBER_INDEX_MIN members get a name index on their first look-up, which
 * every change of their members must keep (member_index_set()). Arrays remember the last element
 * reached, so walking on from it makes look-ups in order cost one step each; any change of an
 * array's elements must be told (member_index_array_changed()).
 *
 * The index holds addresses: a node it knows must not be freed while it is in use (the patcher
 * frees detached nodes only at the end).
 */

#include <stddef.h>

struct cJSON;
struct member_index;

#define MEMBER_INDEX_MIN 16

struct member_index *member_index_new(void);
/** NULL is accepted; returns NULL. */
struct member_index *member_index_free(struct member_index *ix);

/** The member of @object named by the escaped JSON Pointer segment @segment (@len bytes), or NULL. */
struct cJSON *member_index_member(struct member_index *ix, const struct cJSON *object, const char *segment,
                                  size_t len);

/**
 * Element @index of @array, or NULL when the array is shorter: then *@ret_length is its length.
 * *@steps grows by the list steps walked.
 */
struct cJSON *member_index_element(struct member_index *ix, const struct cJSON *array, size_t index,
                                   size_t *ret_length, size_t *steps);

/** Member @name of @object is now @node (NULL: it was removed). */
void member_index_set(struct member_index *ix, const struct cJSON *object, const char *name,
                      struct cJSON *node);

/** The elements of @array changed (one added, removed or replaced). */
void member_index_array_changed(struct member_index *ix, const struct cJSON *array);
