/* SPDX-License-Identifier: MIT */
/*
 * ptc session list | kill ID | reset ID | fork ID NEW: the sessions of the per-user server
 * (ptc serve, docs/sessions.md). Never starts a server: with none running there are no
 * sessions.
 */

#include "cli/cli.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "basic/log.h"

/* A reply line: sessions are small, but an error may quote. */
#define REPLY_MAX (1u << 20)

static void help(void)
{
        printf("Usage: ptc session list\n"
               "       ptc session kill ID\n"
               "       ptc session reset ID\n"
               "       ptc session fork ID NEW\n"
               "\n"
               "The sessions of 'ptc serve' (the live interpreters of 'ptc run --session'):\n"
               "list prints them as JSON (id, cells, idle seconds, busy, pid); kill ends one\n"
               "(its next cell starts a new interpreter and is told so); reset ends one\n"
               "silently (its next cell starts afresh); fork makes session NEW a copy of\n"
               "session ID as it is now (its variables, imports and data; the files of the\n"
               "working directory stay shared), after which each goes its own way. See\n"
               "docs/sessions.md.\n"
               "\n"
               "Options:\n"
               "  --pretty                 indent the JSON\n"
               "  -h, --help               this help\n"
               "\n"
               "Exit status: 0, 1 when the session is not live, NEW is, or the server is\n"
               "not running (kill, reset, fork), 2 on a usage error.\n");
}

int cmd_session(int argc, char **argv)
{
        bool arg_pretty = false;
        const struct cli_option opts[] = {{"pretty", .flag = &arg_pretty}, {}};
        _cleanup_free_ char *line = NULL;
        json_auto_t *req = NULL, *rep = NULL;
        const char *verb, *id = NULL;
        int fd, r;

        r = cli_parse_options(argc, argv, "session", opts, false, help);
        if (r != CLI_OPTIONS_PARSED)
                return r;
        verb = optind < argc ? argv[optind] : NULL;
        if (!verb) {
                log_error("missing a command: list, kill ID, reset ID or fork ID NEW (try 'ptc "
                          "session --help')");
                return EXIT_USAGE;
        }
        if (strcmp(verb, "list") == 0) {
                if (optind + 1 != argc) {
                        log_error("unexpected argument '%s'", argv[optind + 1]);
                        return EXIT_USAGE;
                }
                req = json_pack("{s:s}", "op", "list");
        } else if (strcmp(verb, "kill") == 0 || strcmp(verb, "reset") == 0) {
                if (optind + 2 != argc) {
                        log_error("%s takes one session id (try 'ptc session --help')", verb);
                        return EXIT_USAGE;
                }
                id = argv[optind + 1];
                req = json_pack("{s:s, s:s, s:b}", "op", "close", "session", id, "forget",
                                strcmp(verb, "reset") == 0);
        } else if (strcmp(verb, "fork") == 0) {
                if (optind + 3 != argc) {
                        log_error("fork takes two session ids: ID NEW (try 'ptc session --help')");
                        return EXIT_USAGE;
                }
                id = argv[optind + 1];
                req = json_pack("{s:s, s:s, s:s}", "op", "fork", "session", id, "new",
                                argv[optind + 2]);
        } else {
                log_error("unknown command '%s' (allowed: list, kill, reset, fork)", verb);
                return EXIT_USAGE;
        }
        if (!req)
                return EXIT_INTERNAL;

        r = cli_serve_connect(false, NULL, &fd);
        if (r == -ENOENT || r == -ECONNREFUSED) {
                /* No server: nothing lives. */
                if (!id)
                        return cli_print_json_text("[]", arg_pretty) < 0 ? EXIT_INTERNAL : EXIT_OK;
                log_error("no live session '%s': ptc serve is not running", id);
                return EXIT_SCRIPT_FAILED;
        }
        if (r < 0)
                return EXIT_INTERNAL;
        r = cli_serve_send(fd, req);
        if (r >= 0)
                r = cli_serve_read_line(fd, REPLY_MAX, &line);
        close(fd);
        if (r < 0) {
                log_error("ptc serve did not answer: %s", strerror(-r));
                return EXIT_INTERNAL;
        }
        rep = json_loads(line, 0, NULL);
        if (json_is_string(json_object_get(rep, "error"))) {
                log_error("%s", json_string_value(json_object_get(rep, "error")));
                return EXIT_SCRIPT_FAILED;
        }
        if (!id)
                return cli_print_json(json_object_get(rep, "sessions"), arg_pretty) < 0
                               ? EXIT_INTERNAL
                               : EXIT_OK;
        return EXIT_OK;
}
