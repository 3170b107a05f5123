/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Canonical JSON, written as it is produced: the text of ao_json_canonical() (include/ao/yaml.h:
 * sorted keys, no whitespace, its number and string forms) put together from whole trees, parts
 * of trees and text that is canonical already, into a buffer that either keeps everything (a
 * string, for ao_json_canonical() itself) or is flushed to a file descriptor whenever it holds a
 * chunk. A document of any size then costs one chunk of memory on top of what it is made from.
 *
 * Ownership: a writer owns its buffer; the fd is borrowed and never closed. Errors are sticky:
 * the first failed write is kept, and what is written after it is dropped (so a writer whose
 * file is full does not grow in memory), until ao_json_writer_finish() reports it.
 *
 * Non-logging. Not thread-safe: one writer, one thread.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "ao/strbuf.h"

struct cJSON;

/* What the buffer holds before it is flushed to the fd. */
#define AO_JSON_WRITER_CHUNK (64u * 1024)

/** Embedded; set up with ao_json_writer_init(), released with ao_json_writer_done(). */
struct ao_json_writer {
        struct ao_strbuf _buf; /* owned: text not yet flushed (all of it without an fd) */
        int _fd;               /* borrowed; -1: memory only */
        off_t _offset;         /* where the next flush lands in the file */
        int _error;            /* the first error, -errno; 0 */
        size_t chunk;          /* flush once the buffer holds this much (AO_JSON_WRITER_CHUNK) */
};

/**
 * Start writing: to @fd (borrowed, a file written from offset 0 with pwrite(2), so its file
 * position neither matters nor moves; whatever lies past the end of what is written stays
 * there for the caller to cut), or with @fd < 0 into memory only.
 */
void ao_json_writer_init(struct ao_json_writer *w, int fd);
/** Release the buffer (not the fd). Idempotent. */
void ao_json_writer_done(struct ao_json_writer *w);

/** The first error (-errno), or 0. */
int ao_json_writer_error(const struct ao_json_writer *w);

/** @json as ao_json_canonical() writes it; NULL writes null. */
void ao_json_write(struct ao_json_writer *w, const struct cJSON *json);

/**
 * Called for every value of a tree (the root included) before the writer writes it, after its
 * key. It may write the value itself: return 1. Return 0 to let the writer write it, or a
 * -errno to stop the walk with that error.
 */
typedef int ao_json_write_substitute(const struct cJSON *node, struct ao_json_writer *w, void *userdata);

/** ao_json_write() with @substitute asked first about every value. */
void ao_json_write_with(struct ao_json_writer *w, const struct cJSON *json,
                        ao_json_write_substitute *substitute, void *userdata);

/** Append @text as it is: punctuation, or a value that is canonical JSON already. */
void ao_json_write_raw(struct ao_json_writer *w, const char *text);

/**
 * Write what is left to the fd. Returns the first error of the writer (nothing more is written
 * then), else 0 with the length of the whole text in *@ret_len (may be NULL).
 */
int ao_json_writer_finish(struct ao_json_writer *w, size_t *ret_len);

/** Memory writers: the text (malloc'd, never NULL); the writer is left empty. */
char *ao_json_writer_steal(struct ao_json_writer *w);
