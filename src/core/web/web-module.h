/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The web module: the code that needs libcurl or gumbo (web-fetch.c, the
 * SSRF guard it calls, the html-*.c converter, curl's URL helpers) is built
 * into a loadable module, ptc-web.so, that ptc loads the first time a web
 * tool runs (or `ptc doctor` reports on the web tools). The executable and
 * libptc.so do not link libcurl or gumbo, so a process that never fetches a
 * page never maps their ~30 shared objects.
 *
 * The module exports one symbol, WEB_MODULE_SYMBOL, a const struct
 * web_module. It keeps no state shared with core besides what it owns
 * (curl_global_init(), once), calls no logging and no redactor: everything
 * it needs comes in as arguments, so nothing of core is duplicated in it.
 *
 * Where it is looked for, in order (the first file that exists is loaded,
 * the others are not tried): beside the object the running core code is in
 * (the executable, read from /proc/self/exe, or libptc.so), so a build tree
 * finds build/ptc-web.so; then, relative to that object, the install layout
 * (ptc/ below libptc.so's directory; ../<libdir>/ptc/ from the executable's,
 * PTC_MODULE_DIR_FROM_BINDIR), so a relocated or staged install (DESTDIR)
 * finds its own; then the configured install directory, PTC_MODULE_DIR.
 */

#include <stdbool.h>
#include <stddef.h>

#include "basic/diag.h"
#include "basic/time-util.h"

#define WEB_MODULE_FILE "ptc-web.so"
#define WEB_MODULE_SYMBOL "ptc_web_module_v1"

struct web_request;
struct web_response;

/*
 * What the module offers. A module is used only when @size, @version and
 * the two struct sizes are those of the loading build: a module of another
 * ptc build is refused (web_module_get() says which).
 */
struct web_module {
        size_t size;          /* sizeof(struct web_module) */
        const char *version;  /* PTC_VERSION */
        size_t request_size;  /* sizeof(struct web_request) */
        size_t response_size; /* sizeof(struct web_response) */
        /* web_fetch_many() (web-fetch.h) */
        int (*fetch_many)(const struct web_request *reqs, size_t n, struct web_response *resps,
                          usec_t deadline, int cancel_fd);
        /* html_to_markdown() (html-markdown.h) */
        int (*html_to_markdown)(const char *html, size_t n, const char *base_url, size_t max_out,
                                char **ret_markdown, char **ret_title);
        /*
         * @n bytes of @s percent-encoded but for RFC 3986's unreserved characters
         * (curl_easy_escape()), a new string (free()), or NULL on ENOMEM. n <= INT_MAX.
         */
        char *(*url_escape)(const char *s, size_t n);
        /* @s percent-decoded once (curl_easy_unescape()), a new string (free()), or NULL. */
        char *(*url_unescape)(const char *s);
        /* Whether @url, parsed by curl's URL parser, has a non-empty userinfo password. */
        bool (*url_has_password)(const char *url);
        /*
         * The host of @url as curl's URL parser reads it (the one that fetches it), in one
         * spelling per host: lower case, no brackets around an IPv6 address, no trailing
         * dot, an IPv4-mapped IPv6 address as its IPv4 address. A new string (free()), or
         * NULL when @url does not parse or has no host.
         */
        char *(*url_host)(const char *url);
};

/* The module's one export (web-module-export.c). */
extern const struct web_module ptc_web_module_v1;

/*
 * The module, loaded on the first call (dlopen, RTLD_NOW | RTLD_LOCAL; never
 * unloaded). Returns it, or NULL when it cannot be loaded: then @reterr (may
 * be NULL) says why in one sentence for a tool result or the doctor, e.g.
 * "web tools unavailable: cannot load /usr/lib/ptc/ptc-web.so: <dlerror>" or
 * "web tools unavailable: ptc-web.so not found in /a, /b". The outcome is
 * kept: a failed load is not retried. Any thread (pthread_once).
 */
const struct web_module *web_module_get(struct diag *reterr);

/*
 * For a program that links the module's objects itself (the unit tests,
 * web-module-builtin.c): web_module_get() returns @m and loads nothing.
 * Call before any web_module_get(), from one thread.
 */
void web_module_use_builtin(const struct web_module *m);
