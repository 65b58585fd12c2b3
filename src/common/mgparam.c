/* The one parser of mgparam_table's settings; see mgparam.h. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mglog.h"
#include "mgparam.h"

/* A platform index beyond any machine's device count: larger numbers stay
   part of the substring, as they did before the table. */
#define MGPARAM_DEVICE_INDEX_MAX (1 << 20)

/* Bytes as the user writes them: 16K, 1G, 3000. */
static void size_text(long long n, char *buf, size_t len)
{
    static const char sfx[] = "GMK";
    for (int i = 0; i < 3; i++) {
        long long unit = 1LL << (10 * (3 - i));
        if (n > 0 && n % unit == 0) {
            snprintf(buf, len, "%lld%c", n / unit, sfx[i]);
            return;
        }
    }
    snprintf(buf, len, "%lld", n);
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int parse_bool(const mgparam_t *p, const char *t, mgparam_value_t *v, char *err,
                      size_t errlen)
{
    if (!strcmp(t, "1") || !strcmp(t, "on"))
        v->num = 1;
    else if (!strcmp(t, "0") || !strcmp(t, "off"))
        v->num = 0;
    else
        return fail(err, errlen, "%s=\"%s\": expected on or off (1 or 0)", p->name, t);
    return 0;
}

static int parse_int(const mgparam_t *p, const char *t, mgparam_value_t *v, char *err,
                     size_t errlen)
{
    char *end = NULL;
    if ((p->flags & MGPARAM_F_OFF) && !strcmp(t, "off")) {
        v->num = -1;
        return 0;
    }
    errno = 0;
    long long n = strtoll(t, &end, 10);
    if (end == t || *end || errno || n < p->min || n > p->max)
        return fail(err, errlen, "%s=%s is not %s%s from %lld to %lld", p->name, t,
                    (p->flags & MGPARAM_F_OFF) ? "off or " : "", p->unit ? p->unit : "a number",
                    p->min, p->max);
    v->num = n;
    return 0;
}

static int parse_size(const mgparam_t *p, const char *t, mgparam_value_t *v, char *err,
                      size_t errlen)
{
    char *end = NULL, lo[32], hi[32];
    unsigned long long mult = 1;
    errno = 0;
    unsigned long long n = strtoull(t, &end, 10);
    if (end != t && (*end == 'K' || *end == 'k'))
        mult = 1ULL << 10, end++;
    else if (end != t && (*end == 'M' || *end == 'm'))
        mult = 1ULL << 20, end++;
    else if (end != t && (*end == 'G' || *end == 'g'))
        mult = 1ULL << 30, end++;
    /* strtoull takes "-1" as a huge number; a byte count has no sign. */
    int bad = end == t || *end || errno || t[0] == '-' || n > SIZE_MAX / mult ||
              n * mult > (unsigned long long)LLONG_MAX;
    if (bad || (p->min <= 1 && (long long)(n * mult) < p->min))
        return fail(err, errlen,
                    "%s=\"%s\": expected a %sbyte count with an optional K, M or G suffix", p->name,
                    t, p->min > 0 ? "positive " : "");
    long long b = (long long)(n * mult);
    size_text(p->min, lo, sizeof lo);
    size_text(p->max, hi, sizeof hi);
    if (b < p->min && p->max == MGPARAM_NO_MAX)
        return fail(err, errlen, "%s=\"%s\" is below the minimum of %s", p->name, t, lo);
    if (b < p->min || b > p->max)
        return fail(err, errlen, "%s=\"%s\": expected from %s to %s", p->name, t, lo, hi);
    v->num = b;
    return 0;
}

static int parse_enum(const mgparam_t *p, const char *t, mgparam_value_t *v, char *err,
                      size_t errlen)
{
    char list[256] = "";
    size_t used = 0;
    for (int i = 0; p->values[i]; i++) {
        if (!strcmp(t, p->values[i])) {
            v->num = i;
            return 0;
        }
        int w = snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", p->values[i]);
        if (w > 0 && (size_t)w < sizeof list - used)
            used += (size_t)w;
    }
    return fail(err, errlen, "%s=\"%s\" is not one of %s", p->name, t, list);
}

/* SUBSTRING[:N]: a trailing :N that does not read as an index stays part of
   the substring (platform names may hold colons). */
static int parse_device(const mgparam_t *p, const char *t, mgparam_value_t *v, char *err,
                        size_t errlen)
{
    const char *colon = strrchr(t, ':');
    char *end = NULL;
    v->len = strlen(t);
    v->num = 0;
    if (colon && colon[1]) {
        errno = 0;
        long n = strtol(colon + 1, &end, 10);
        if (*end == '\0' && !errno && n >= 0 && n <= MGPARAM_DEVICE_INDEX_MAX) {
            v->num = n;
            v->len = (size_t)(colon - t);
        }
    }
    if (v->len == 0)
        return fail(err, errlen,
                    "%s=\"%s\": expected SUBSTRING[:N] with a non-empty platform name substring",
                    p->name, t);
    return 0;
}

int mgparam_parse(const mgparam_t *p, const char *text, mgparam_value_t *v, char *err,
                  size_t errlen)
{
    memset(v, 0, sizeof *v);
    v->text = text;
    v->len = strlen(text);
    switch (p->type) {
    case MGPARAM_T_BOOL:
        return parse_bool(p, text, v, err, errlen);
    case MGPARAM_T_INT:
        return parse_int(p, text, v, err, errlen);
    case MGPARAM_T_SIZE:
        return parse_size(p, text, v, err, errlen);
    case MGPARAM_T_ENUM:
        return parse_enum(p, text, v, err, errlen);
    case MGPARAM_T_DEVICE:
        return parse_device(p, text, v, err, errlen);
    case MGPARAM_T_STRING:
        return 0;
    }
    return fail(err, errlen, "%s: a setting of unknown type %d", p->name, (int)p->type);
}

int mgparam_read(mgparam_id_t id, mgparam_value_t *v, char *err, size_t errlen)
{
    const mgparam_t *p = &mgparam_table[id];
    const char *t = getenv(p->name);
    if (t && (t[0] || (p->flags & MGPARAM_F_EMPTY))) {
        int rc = mgparam_parse(p, t, v, err, errlen);
        v->set = 1;
        return rc;
    }
    if (p->def)
        return mgparam_parse(p, p->def, v, err, errlen);
    memset(v, 0, sizeof *v);
    return 0;
}

long long mgparam_default(mgparam_id_t id)
{
    mgparam_value_t v;
    const mgparam_t *p = &mgparam_table[id];
    return p->def && mgparam_parse(p, p->def, &v, NULL, 0) == 0 ? v.num : 0;
}

mgparam_value_t mgparam_read_or_default(mgparam_id_t id, int who)
{
    mgparam_value_t v;
    char err[256];
    if (mgparam_read(id, &v, err, sizeof err) == 0)
        return v;
    MGLOG_WARN((mglog_subsys_t)who, "%s; using the default", err);
    const mgparam_t *p = &mgparam_table[id];
    if (!p->def || mgparam_parse(p, p->def, &v, NULL, 0) != 0)
        memset(&v, 0, sizeof v);
    return v;
}

void mgparam_type_text(const mgparam_t *p, char *buf, size_t len)
{
    char lo[32], hi[32];
    size_t used = 0;
    switch (p->type) {
    case MGPARAM_T_BOOL:
        snprintf(buf, len, "on|off");
        break;
    case MGPARAM_T_INT:
        snprintf(buf, len, "%s%lld..%lld", (p->flags & MGPARAM_F_OFF) ? "off|" : "", p->min,
                 p->max);
        break;
    case MGPARAM_T_SIZE:
        size_text(p->min, lo, sizeof lo);
        if (p->max == MGPARAM_NO_MAX)
            snprintf(buf, len, "size>=%s", lo);
        else {
            size_text(p->max, hi, sizeof hi);
            snprintf(buf, len, "size %s..%s", lo, hi);
        }
        break;
    case MGPARAM_T_ENUM:
        buf[0] = '\0';
        for (int i = 0; p->values[i]; i++) {
            int w = snprintf(buf + used, len - used, "%s%s", i ? "|" : "", p->values[i]);
            if (w < 0 || (size_t)w >= len - used)
                break;
            used += (size_t)w;
        }
        break;
    case MGPARAM_T_DEVICE:
        snprintf(buf, len, "SUBSTRING[:N]");
        break;
    default:
        snprintf(buf, len, "string");
    }
}

const char *mgparam_default_text(const mgparam_t *p)
{
    return p->def ? p->def : p->def_doc ? p->def_doc : "unset";
}
