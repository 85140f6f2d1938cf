/* exec/ckpt/ckpt_stream.c — the checkpoint byte stream (see ckpt_stream.h). */
#include "exec/ckpt/ckpt_stream.h"

#include <string.h>

void stream_fnv(Stream *s, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) s->fnv = (s->fnv ^ b[i]) * 0x100000001B3ull; /* FNV-1a 64's prime */
}

void stream_put(Stream *s, const void *p, size_t n)
{
    if (s->err) return;
    stream_fnv(s, p, n);
    if (fwrite(p, 1, n, s->f) != n) s->err = 1;
    s->pos += n;
}

void stream_get(Stream *s, void *p, size_t n)
{
    if (s->err) {
        memset(p, 0, n);
        return;
    }
    if (fread(p, 1, n, s->f) != n) {
        s->err = 1;
        memset(p, 0, n);
        return;
    }
    stream_fnv(s, p, n);
    s->pos += n;
}

void stream_put_u32(Stream *s, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    stream_put(s, b, 4);
}

void stream_put_u64(Stream *s, uint64_t v)
{
    stream_put_u32(s, (uint32_t)v);
    stream_put_u32(s, (uint32_t)(v >> 32));
}

void stream_put_f32(Stream *s, float f)
{
    uint32_t v;
    memcpy(&v, &f, 4);
    stream_put_u32(s, v);
}

uint32_t stream_get_u32(Stream *s)
{
    unsigned char b[4];
    stream_get(s, b, 4);
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

uint64_t stream_get_u64(Stream *s)
{
    uint64_t lo = stream_get_u32(s);
    return lo | (uint64_t)stream_get_u32(s) << 32;
}

float stream_get_f32(Stream *s)
{
    uint32_t v = stream_get_u32(s);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

Status stream_check_end(Stream *s, const char *path, Err *e)
{
    uint64_t sum = s->fnv, stored = stream_get_u64(s);
    if (s->err)
        return err_set(e, ST_DATA, "%s: truncated checkpoint (%llu bytes read)", path, (unsigned long long)s->pos);
    if (stored != sum)
        return err_set(e, ST_DATA, "%s: checksum mismatch (stored %016llx, computed %016llx): the file is corrupted",
                       path, (unsigned long long)stored, (unsigned long long)sum);
    if (fgetc(s->f) != EOF) return err_set(e, ST_DATA, "%s: unexpected data after the checksum", path);
    return ST_OK;
}
