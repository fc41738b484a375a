#include "caprec.h"

#include <string.h>

#include "jbuf.h"

void caprec_head_now(struct caprec_head *h)
{
	clock_gettime(CLOCK_REALTIME, &h->t);
	clock_gettime(CLOCK_MONOTONIC, &h->mono);
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
	jbuf_raw(&w, obj, n);
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
	/* Reserve room for ',"cut":true}\n'. */
	cut = jbuf_str_cut(&w, text, n, 14);
	if (cut)
		jbuf_raw(&w, ",\"cut\":true", 11);
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
	jbuf_raw(&w, ",\"count\":", 9);
	jbuf_u64(&w, count);
	jbuf_raw(&w, ",\"reason\":", 10);
	jbuf_strz(&w, reason);
	return caprec_close(&w);
}

size_t caprec_end(char *buf, size_t cap, const struct caprec_head *h, uint64_t lines, uint64_t lost)
{
	struct jbuf w;

	jbuf_init(&w, buf, cap);
	caprec_open(&w, "end", h, 0);
	jbuf_raw(&w, ",\"lines\":", 9);
	jbuf_u64(&w, lines);
	jbuf_raw(&w, ",\"lost\":", 8);
	jbuf_u64(&w, lost);
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

size_t caprec_start_tail(char *buf, size_t cap, char *const *argv, int argc, const char *exe,
			 const char *host, char *const *envp, const struct envlist *allow)
{
	struct jbuf w;
	int i, pass, first, cut = 0;

	jbuf_init(&w, buf, cap);
	jbuf_raw(&w, "\"argv\":[", 8);
	for (i = 0; i < argc && argv && argv[i]; i++) {
		size_t mark = w.len;
		if (i)
			jbuf_raw(&w, ",", 1);
		jbuf_strz(&w, argv[i]);
		if (!caprec_fits(&w, mark)) {
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
			secret = envlist_is_secret(envp[i], nlen);
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
	jbuf_raw(&w, "]", 1);
	if (cut)
		jbuf_raw(&w, ",\"env_cut\":true", 15);
	jbuf_raw(&w, "}", 1);
	return jbuf_ok(&w) ? w.len : 0;
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
