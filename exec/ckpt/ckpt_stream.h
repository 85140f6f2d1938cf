/* exec/ckpt/ckpt_stream.h — the checkpoint files' byte stream: little-endian
 * integers and floats over a FILE, with a running FNV-1a 64 checksum of every
 * byte written or read (exec/ckpt/ckpt.c, exec/ckpt/ckpt_layout.c). Internal to exec/. */
#ifndef FP8PLAN_EXEC_CKPT_STREAM_H
#define FP8PLAN_EXEC_CKPT_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/status.h"

#define STREAM_FNV_BASIS 0xCBF29CE484222325ull /* FNV-1a 64's offset basis */

typedef struct {
    FILE *f;
    uint64_t fnv; /* start at STREAM_FNV_BASIS */
    int err;      /* write: I/O error; read: short read (what was not read reads as zeros) */
    uint64_t pos; /* bytes so far */
} Stream;

/* Add n bytes to the checksum only. */
void stream_fnv(Stream *s, const void *p, size_t n);
void stream_put(Stream *s, const void *p, size_t n);
void stream_get(Stream *s, void *p, size_t n);
void stream_put_u32(Stream *s, uint32_t v);
void stream_put_u64(Stream *s, uint64_t v);
void stream_put_f32(Stream *s, float f);
uint32_t stream_get_u32(Stream *s);
uint64_t stream_get_u64(Stream *s);
float stream_get_f32(Stream *s);
/* The end of a checkpoint being read: its stored checksum (u64) equal to the running one and
 * nothing after it; ST_DATA naming path (truncated, corrupted, trailing data) otherwise. */
Status stream_check_end(Stream *s, const char *path, Err *e);

#endif
