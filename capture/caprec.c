#include "capture/caprec.h"

#include <string.h>

#include "capture/banner.h"
#include "capture/jbuf.h"

void caprec_head_now(struct caprec_head *h)
{
	clock_gettime(CLOCK_REALTIME, &h->t);
	clock_gettime(CLOCK_MONOTONIC, &h->mono);
	h->partial = 0;
}

/* `{"src":"<src>","t":..,"mono":..,"pid":..,"tid":..,"fd":..` */
static void caprec_open(struct jbuf *w, const char *src, const struct caprec_head *h, int with_mono)
{
	jbuf_raw(w, "{\"src\":\"", 8);
	jbuf_rawz(w, src);
	jbuf_raw(w, "\",\"t\":", 6);
	jbuf_time(w, &h->t);
	if (with_mono) {
		jbuf_raw(w, ",\"mono\":", 8);
		jbuf_time(w, &h->mono);
	}
	if (h->pid > 0) {
		jbuf_raw(w, ",\"pid\":", 7);
		jbuf_i64(w, h->pid);
	}
}

static void caprec_where(struct jbuf *w, const struct caprec_head *h)
{
	if (h->tid > 0) {
		jbuf_raw(w, ",\"tid\":", 7);
		jbuf_i64(w, h->tid);
	}
	if (h->fd >= 0) {
		jbuf_raw(w, ",\"fd\":", 6);
		jbuf_i64(w, h->fd);
	}
}

/* `,"partial":true` and `,"invalid_utf8":N` where they apply. */
static void caprec_flags(struct jbuf *w, const struct caprec_head *h)
{
	if (h->partial)
		jbuf_raw(w, ",\"partial\":true", 15);
	if (w->invalid) {
		jbuf_raw(w, ",\"invalid_utf8\":", 16);
		jbuf_u64(w, w->invalid);
	}
}

static size_t caprec_close(struct jbuf *w)
{
	jbuf_raw(w, "}\n", 2);
	return jbuf_ok(w) ? w->len : 0;
}

size_t caprec_audit(char *buf, size_t cap, const struct caprec_head *h, const char *obj, size_t n)
{
	struct jbuf w;

	jbuf_init(&w, buf, cap);
	caprec_open(&w, "audit", h, 1);
	caprec_where(&w, h);
	jbuf_raw(&w, ",\"event\":", 9);
	/* Trailing whitespace (a '\r' before the newline) is not part of the object. */
	while (n && (obj[n - 1] == ' ' || obj[n - 1] == '\t' || obj[n - 1] == '\r'))
		n--;
	while (n && (obj[0] == ' ' || obj[0] == '\t'))
		obj++, n--;
	jbuf_raw_utf8(&w, obj, n);
	caprec_flags(&w, h);
	return caprec_close(&w);
}

/* Text records: the text goes last so that it can be cut to what fits. */
static size_t caprec_text(char *buf, size_t cap, const char *src, const struct caprec_head *h,
			  const char *rule, const char *text, size_t n)
{
	struct jbuf w;
	int cut;

	if (n && text[n - 1] == '\r')
		n--;
	jbuf_init(&w, buf, cap);
	caprec_open(&w, src, h, 1);
	caprec_where(&w, h);
	if (rule) {
		jbuf_raw(&w, ",\"rule\":", 8);
		jbuf_strz(&w, rule);
	}
	jbuf_raw(&w, ",\"text\":", 8);
	/* Reserve room for ',"cut":true,"partial":true,"invalid_utf8":NNNNN}\n'. */
	cut = jbuf_str_cut(&w, text, n, 56);
	if (cut)
		jbuf_raw(&w, ",\"cut\":true", 11);
	caprec_flags(&w, h);
	return caprec_close(&w);
}

size_t caprec_banner(char *buf, size_t cap, const struct caprec_head *h, const char *rule,
		     const char *text, size_t n)
{
	return caprec_text(buf, cap, "banner", h, rule, text, n);
}

size_t caprec_line(char *buf, size_t cap, const struct caprec_head *h, const char *text, size_t n)
{
	return caprec_text(buf, cap, "line", h, NULL, text, n);
}

size_t caprec_lost(char *buf, size_t cap, const struct caprec_head *h, uint64_t count,
		   const char *reason)
{
	struct jbuf w;

	jbuf_init(&w, buf, cap);
	caprec_open(&w, "lost", h, 0);
	if (h->fd >= 0) {
		jbuf_raw(&w, ",\"fd\":", 6);
		jbuf_i64(&w, h->fd);
	}
	jbuf_raw(&w, ",\"count\":", 9);
	jbuf_u64(&w, count);
	jbuf_raw(&w, ",\"reason\":", 10);
	jbuf_strz(&w, reason);
	return caprec_close(&w);
}

size_t caprec_uncertain(char *buf, size_t cap, const struct caprec_head *h, uint64_t count,
			const char *reason, const char *rec, size_t rec_len)
{
	struct jbuf w;

	jbuf_init(&w, buf, cap);
	caprec_open(&w, "uncertain", h, 1);
	if (h->fd >= 0) {
		jbuf_raw(&w, ",\"fd\":", 6);
		jbuf_i64(&w, h->fd);
	}
	jbuf_raw(&w, ",\"reason\":", 10);
	jbuf_strz(&w, reason);
	jbuf_raw(&w, ",\"count\":", 9);
	jbuf_u64(&w, count);
	if (rec && rec_len) {
		jbuf_raw(&w, ",\"record\":", 10);
		jbuf_raw(&w, rec, rec_len);
	}
	return caprec_close(&w);
}

size_t caprec_end(char *buf, size_t cap, const struct caprec_head *h, const struct caprec_end *e)
{
	struct jbuf w;

	jbuf_init(&w, buf, cap);
	caprec_open(&w, "end", h, 0);
	if (e->how) {
		jbuf_raw(&w, ",\"how\":", 7);
		jbuf_strz(&w, e->how);
		if (e->how[0] == 's' && !strcmp(e->how, "signal")) {
			jbuf_raw(&w, ",\"signal\":", 10);
			jbuf_i64(&w, e->sig);
		} else if (e->code >= 0) {
			jbuf_raw(&w, ",\"code\":", 8);
			jbuf_i64(&w, e->code);
		}
	}
	if (e->by) {
		jbuf_raw(&w, ",\"by\":", 6);
		jbuf_strz(&w, e->by);
	}
	if (e->counts) {
		jbuf_raw(&w, ",\"lines\":", 9);
		jbuf_u64(&w, e->lines);
		jbuf_raw(&w, ",\"lost\":", 8);
		jbuf_u64(&w, e->lost);
	}
	return caprec_close(&w);
}

/* Space kept free while adding env entries, for what closes the tail. */
#define RECORD_TAIL_RESERVE 64

/* Runs `add` and undoes it if it did not fit before the reserve. */
static int caprec_fits(struct jbuf *w, size_t mark)
{
	if (!w->overflow && w->len + RECORD_TAIL_RESERVE <= w->cap)
		return 1;
	w->len = mark;
	w->overflow = 0;
	return 0;
}

#define CAPREC_REDACTED "<redacted>"
#define CAPREC_MAX_REDACTED 64

/* Names of what was redacted, for argv_redacted (pointers into argv). */
struct caprec_names {
	size_t n;
	const char *s[CAPREC_MAX_REDACTED];
	size_t len[CAPREC_MAX_REDACTED];
	int idx[CAPREC_MAX_REDACTED];   /* >= 0: no option name, write "argv[idx]" */
};

static void caprec_name(struct caprec_names *nm, const char *s, size_t len, int idx)
{
	if (nm->n == CAPREC_MAX_REDACTED)
		return;
	nm->s[nm->n] = s;
	nm->len[nm->n] = len;
	nm->idx[nm->n] = idx;
	nm->n++;
}

/* s[0..n) inside a string, each URL's credentials replaced. Returns 1 when any was. */
static int caprec_esc_urls(struct jbuf *w, const char *s, size_t n)
{
	size_t at = 0, off, len;
	int any = 0;

	while (envlist_url_cred(s, n, at, &off, &len)) {
		jbuf_esc(w, s + at, off - at);
		jbuf_rawz(w, CAPREC_REDACTED);
		at = off + len;
		any = 1;
	}
	jbuf_esc(w, s + at, n - at);
	return any;
}

/* One argv entry, with what must not leave the process redacted. */
static void caprec_arg(struct jbuf *w, char *const *argv, int i, struct caprec_names *nm)
{
	const char *a = argv[i], *eq;
	size_t n = strlen(a);

	jbuf_raw(w, "\"", 1);
	if (i > 0 && argv[i - 1][0] == '-' && !strchr(argv[i - 1], '=') &&
	    envlist_secret_option(argv[i - 1], strlen(argv[i - 1])) && strncmp(a, "--", 2)) {
		/* the value of `--api-key VALUE` */
		jbuf_rawz(w, CAPREC_REDACTED);
		caprec_name(nm, argv[i - 1], strlen(argv[i - 1]), -1);
	} else if (a[0] == '-' && (eq = strchr(a, '=')) && envlist_secret_option(a, (size_t)(eq - a))) {
		/* `--api-key=VALUE` */
		jbuf_esc(w, a, (size_t)(eq - a) + 1);
		jbuf_rawz(w, CAPREC_REDACTED);
		caprec_name(nm, a, (size_t)(eq - a), -1);
	} else if (a[0] == '-' && (eq = strchr(a, '='))) {
		/* `--db=postgres://user:pw@host/db` */
		jbuf_esc(w, a, (size_t)(eq - a) + 1);
		if (caprec_esc_urls(w, eq + 1, n - (size_t)(eq - a) - 1))
			caprec_name(nm, a, (size_t)(eq - a), -1);
	} else if (caprec_esc_urls(w, a, n)) {
		if (i > 0 && argv[i - 1][0] == '-' && !strchr(argv[i - 1], '='))
			caprec_name(nm, argv[i - 1], strlen(argv[i - 1]), -1);
		else
			caprec_name(nm, NULL, 0, i);
	}
	jbuf_raw(w, "\"", 1);
}

/* 1 when the environment entry's value holds URL credentials. */
static int caprec_env_url(const char *entry)
{
	const char *eq = strchr(entry, '=');
	size_t off, len;

	return eq && envlist_url_cred(eq + 1, strlen(eq + 1), 0, &off, &len);
}

size_t caprec_start_tail(char *buf, size_t cap, char *const *argv, int argc, const char *exe,
			 const char *host, char *const *envp, const struct envlist *allow)
{
	struct jbuf w;
	struct caprec_names nm;
	int i, pass, first, cut = 0;
	size_t k;

	nm.n = 0;
	jbuf_init(&w, buf, cap);
	jbuf_raw(&w, "\"argv\":[", 8);
	for (i = 0; i < argc && argv && argv[i]; i++) {
		size_t mark = w.len, names = nm.n;
		if (i)
			jbuf_raw(&w, ",", 1);
		caprec_arg(&w, argv, i, &nm);
		if (!caprec_fits(&w, mark)) {
			nm.n = names;
			cut = 1;
			break;
		}
	}
	jbuf_raw(&w, "],\"exe\":", 8);
	jbuf_strz(&w, exe ? exe : "");
	jbuf_raw(&w, ",\"host\":", 8);
	jbuf_strz(&w, host ? host : "");
	if (!jbuf_ok(&w) || w.len + RECORD_TAIL_RESERVE > cap)
		return 0;
	/* Pass 0: allowed names with values; pass 1: secret names alone. */
	for (pass = 0; pass < 2; pass++) {
		jbuf_rawz(&w, pass ? "},\"env_redacted\":[" : ",\"env\":{");
		first = 1;
		for (i = 0; envp && envp[i]; i++) {
			const char *eq = strchr(envp[i], '=');
			size_t nlen = eq ? (size_t)(eq - envp[i]) : strlen(envp[i]);
			size_t mark = w.len;
			int secret;

			if (!envlist_allows(allow, envp[i], nlen))
				continue;
			secret = envlist_is_secret(envp[i], nlen) || caprec_env_url(envp[i]);
			if (secret != pass)
				continue;
			if (!first)
				jbuf_raw(&w, ",", 1);
			jbuf_str(&w, envp[i], nlen);
			if (!pass) {
				jbuf_raw(&w, ":", 1);
				jbuf_strz(&w, eq ? eq + 1 : "");
			}
			if (!caprec_fits(&w, mark)) {
				cut = 1;
				continue;
			}
			first = 0;
		}
	}
	jbuf_raw(&w, "],\"argv_redacted\":[", 19);
	for (k = 0; k < nm.n; k++) {
		size_t mark = w.len;
		if (k)
			jbuf_raw(&w, ",", 1);
		if (nm.idx[k] >= 0) {
			jbuf_raw(&w, "\"argv[", 6);
			jbuf_i64(&w, nm.idx[k]);
			jbuf_raw(&w, "]\"", 2);
		} else {
			jbuf_str(&w, nm.s[k], nm.len[k]);
		}
		if (!caprec_fits(&w, mark)) {
			cut = 1;
			break;
		}
	}
	jbuf_raw(&w, "]", 1);
	if (cut)
		jbuf_raw(&w, ",\"env_cut\":true", 15);
	jbuf_raw(&w, "}", 1);
	return jbuf_ok(&w) ? w.len : 0;
}

size_t caprec_mode(char *buf, size_t cap, int all_lines, const struct banner_set *rules,
		   const char *rules_from)
{
	struct jbuf w;
	size_t i, n;

	jbuf_init(&w, buf, cap);
	jbuf_rawz(&w, all_lines ? "\"capture\":{\"all_lines\":true" : "\"capture\":{\"all_lines\":false");
	if (rules) {
		jbuf_rawz(&w, ",\"rules_from\":");
		jbuf_strz(&w, rules_from && *rules_from ? rules_from : "built-in");
		jbuf_rawz(&w, ",\"rules\":[");
		n = banner_set_count(rules);
		for (i = 0; i < n; i++) {
			size_t mark = w.len;
			if (i)
				jbuf_raw(&w, ",", 1);
			jbuf_strz(&w, banner_set_name(rules, i));
			/* room kept for the closing part and "rules_cut" */
			if (w.overflow || w.len + 24 > cap) {
				w.overflow = 0;
				w.len = mark;
				jbuf_rawz(&w, "],\"rules_cut\":true");
				break;
			}
		}
		if (i == n)
			jbuf_raw(&w, "]", 1);
	}
	jbuf_raw(&w, "}", 1);
	return jbuf_ok(&w) ? w.len : 0;
}

size_t caprec_tail_add(char *tail, size_t tail_len, size_t cap, const char *member, size_t n)
{
	/* the tail ends with the object's '}': the member goes before it */
	if (!tail_len || tail_len > cap || tail[tail_len - 1] != '}' || !n || n + 2 > cap - tail_len)
		return tail_len;
	tail[tail_len - 1] = ',';
	memcpy(tail + tail_len, member, n);
	tail[tail_len + n] = '}';
	return tail_len + n + 1;
}

size_t caprec_start(char *buf, size_t cap, const struct caprec_head *h, long ppid,
		    const char *tail, size_t tail_len)
{
	struct jbuf w;

	jbuf_init(&w, buf, cap);
	caprec_open(&w, "start", h, 1);
	if (ppid >= 0) {
		jbuf_raw(&w, ",\"ppid\":", 8);
		jbuf_i64(&w, ppid);
	}
	jbuf_raw(&w, ",", 1);
	jbuf_raw(&w, tail, tail_len);
	jbuf_raw(&w, "\n", 1);
	return jbuf_ok(&w) ? w.len : 0;
}
