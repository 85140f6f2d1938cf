/* import/read_toml.cpp — a torchtitan TOML through toml++ (Debian libtomlplusplus-dev), the one C++ file
 * of fp8plan: it flattens the parsed table to dotted keys with their lines (training.seq_len = 8192)
 * and hands them to C. Arrays of scalars become one comma-separated value. No exception escapes. */
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "import/import.h"

namespace
{

struct Walk {
    const char *path;
    ImportKvList *out;
    Err *e;
    Status st = ST_OK;
};

std::string scalar_text(const toml::node &n)
{
    if (auto s = n.as_string()) return std::string(s->get());
    if (auto i = n.as_integer()) return std::to_string(i->get());
    if (auto b = n.as_boolean()) return b->get() ? "true" : "false";
    if (auto f = n.as_floating_point()) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.17g", f->get());
        return buf;
    }
    return "(a date or time)";
}

void flatten(Walk &w, const toml::table &t, const std::string &prefix, int depth)
{
    for (auto &&[k, v] : t) {
        if (w.st) return;
        std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
        int line = v.source().begin.line ? (int)v.source().begin.line : 1;
        if (key.size() >= IMPORT_KEY_MAX) {
            w.st = err_set(w.e, ST_DATA, "%s:%d: a key path longer than %d bytes", w.path, line, IMPORT_KEY_MAX - 1);
            return;
        }
        if (depth > 16) {
            w.st = err_set(w.e, ST_DATA, "%s:%d: %s: nested deeper than 16 levels", w.path, line, key.c_str());
            return;
        }
        if (auto sub = v.as_table()) {
            flatten(w, *sub, key, depth + 1);
            continue;
        }
        std::string val;
        if (auto arr = v.as_array()) {
            for (auto &&el : *arr) {
                if (el.is_table() || el.is_array()) continue; /* arrays of tables: not settings fp8plan reads */
                if (!val.empty()) val += ",";
                val += scalar_text(el);
            }
        } else {
            val = scalar_text(v);
        }
        if (val.size() >= IMPORT_VAL_MAX) {
            w.st = err_set(w.e, ST_DATA, "%s:%d: %s: a value of %zu bytes (at most %d)", w.path, line, key.c_str(),
                           val.size(), IMPORT_VAL_MAX - 1);
            return;
        }
        w.st = import_kv_add(w.out, line, key.c_str(), val.c_str(), w.e);
    }
}

} // namespace

extern "C" Status import_read_toml(const char *path, const char *text, size_t len, ImportKvList *out, Err *e)
{
    try {
        toml::table tbl = toml::parse(std::string_view(text, len), std::string_view(path));
        Walk w{path, out, e};
        flatten(w, tbl, "", 0);
        return w.st;
    } catch (const toml::parse_error &err) {
        return err_set(e, ST_DATA, "%s:%d: not TOML: %.*s", path, (int)err.source().begin.line,
                       (int)err.description().size(), err.description().data());
    } catch (const std::bad_alloc &) {
        return err_set(e, ST_NOMEM, "out of memory reading %s", path);
    } catch (...) {
        return err_set(e, ST_DATA, "%s: the TOML parser failed", path);
    }
}
