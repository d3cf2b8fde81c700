/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "basic/diag.h"
#include "basic/log.h"
#include "basic/path-util.h"
#include "basic/process-util.h"
#include "cli/cli-core.h"
#include "core/registry/registry.h"
#include "core/sandbox/sandbox.h"
#include "core/spawn/interpreter.h"
#include "core/spawn/spawn.h"
#include "core/tools/pidns-init.h"
#include "core/web/search-providers.h"
#include "ptc-version.h"

static void show_interpreter(const struct ptc_config *c, enum ptc_mode mode)
{
        _cleanup_free_ char *path = NULL, *version = NULL;
        struct diag d = {};

        if (interpreter_resolve(c, mode, &path, &d) < 0) {
                printf("  %-8s NOT FOUND: %s\n", config_mode_to_string(mode), d.message);
                return;
        }
        if (interpreter_version(path, &version) < 0)
                printf("  %-8s %s (does not run)\n", config_mode_to_string(mode), path);
        else
                printf("  %-8s %s (Python %s)\n", config_mode_to_string(mode), path, version);
}

/* Which provider web_search and web_extract would use, and why not when none. */
static void show_web(const struct ptc_config *c)
{
        _cleanup_free_ char *pdftotext = find_in_path("pdftotext");
        struct web_provider p;
        struct diag d = {};

        printf("web:\n");
        if (web_search_provider_resolve(c, &p, &d) < 0)
                printf("  web_search   off: %s\n", d.message);
        else
                printf("  web_search   %s (%s)%s\n", p.name, p.base_url,
                       c->search_provider ? "" : ", chosen by the credential present");
        d = (struct diag){};
        if (web_extract_provider_resolve(c, &p, &d) < 0)
                printf("  web_extract  error: %s\n", d.message);
        else if (p.kind == WEB_PROVIDER_NONE)
                printf("  web_extract  builtin (libcurl + gumbo; PDF: %s); private URLs %s\n",
                       pdftotext ? pdftotext : "no pdftotext, PDFs are refused",
                       c->allow_private_urls ? "allowed" : "blocked");
        else
                printf("  web_extract  %s (%s)\n", p.name, p.base_url);
}

static void show_isolation(const struct ptc_config *c)
{
        struct sandbox_probe p;
        bool all = true;

        sandbox_probe(&p);
        printf("isolation layers (strict needs all; auto uses those that work):\n");
        for (int l = 0; l < _SANDBOX_LAYER_MAX; l++) {
                all = all && p.works[l];
                if (l == SANDBOX_LAYER_LANDLOCK && p.works[l])
                        printf("  %-11s works (ABI %d)\n", sandbox_layer_to_string(l),
                               p.landlock_abi);
                else if (p.works[l])
                        printf("  %-11s works\n", sandbox_layer_to_string(l));
                else
                        printf("  %-11s does not work: %s\n", sandbox_layer_to_string(l), p.why[l]);
        }
        printf("  %-11s %s%s\n", "cgroup",
               cgroup_base()->path ? "" : "not used: ", cgroup_base()->why);
        printf("isolation: configured %s, effective ", config_isolation_to_string(c->isolation));
        if (c->isolation == PTC_ISOLATION_NONE)
                printf("none\n");
        else if (all)
                printf("strict (every layer)\n");
        else if (c->isolation == PTC_ISOLATION_STRICT)
                printf("none: strict cannot be set up here, runs fail\n");
        else {
                const char *sep = "";

                printf("partial (");
                for (int l = 0; l < _SANDBOX_LAYER_MAX; l++)
                        if (p.works[l]) {
                                printf("%s%s", sep, sandbox_layer_to_string(l));
                                sep = ", ";
                        }
                printf(")\n");
        }
}

/* What confines terminal commands (docs/isolation.md, the tools' side). */
static void show_terminal(const struct ptc_config *c)
{
        int r;

        if (c->terminal_strict) {
                printf("terminal: isolation strict: each command in the script's sandbox "
                       "(network %s); a layer missing above fails the call\n",
                       c->terminal_network ? "on" : "off");
                return;
        }
        if (c->isolation == PTC_ISOLATION_NONE) {
                printf("terminal: commands run as ptc's user (isolation none)\n");
                return;
        }
        if (geteuid() != 0) {
                printf("terminal: commands run as ptc's user; ptc is non-dumpable, so they "
                       "cannot read its environment or memory\n");
                return;
        }
        r = pidns_probe();
        if (r < 0)
                printf("terminal: commands run as root without a pid namespace (%s): they "
                       "can see ptc\n",
                       strerror(-r));
        else
                printf("terminal: commands run as root, each in its own pid namespace (ptc "
                       "is not visible to them)\n");
}

static void help(void)
{
        printf("Usage: ptc doctor [--config FILE]\n"
               "\n"
               "Report the interpreter ptc would use, the config file, the tools, and\n"
               "which isolation layers work on this machine.\n"
               "\n"
               "Options:\n"
               "  --config FILE            config file (default: $PTC_CONFIG, else\n"
               "                           $XDG_CONFIG_HOME/ptc/config.yaml)\n"
               "  -h, --help               this help\n");
}

int cmd_doctor(int argc, char **argv)
{
        _cleanup_free_ char *cfgpath = NULL, *names = NULL;
        _cleanup_registry_ struct registry *reg = NULL;
        const char *arg_config = NULL;
        const struct cli_option opts[] = {
                {"config", &arg_config},
                {},
        };
        struct ptc_config config = {};
        struct utsname u;
        struct stat st;
        int r, pidfd;

        r = cli_parse_options(argc, argv, "doctor", opts, false, help);
        if (r != CLI_OPTIONS_PARSED)
                return r;
        if (optind < argc) {
                log_error("unexpected argument '%s' (try 'ptc doctor --help')", argv[optind]);
                return EXIT_USAGE;
        }
        printf("ptc %s\n", PTC_VERSION);
        if (uname(&u) == 0)
                printf("kernel: %s %s\n", u.sysname, u.release);
        if (arg_config)
                printf("config: %s (--config)\n", arg_config);
        else if (config_default_path(&cfgpath) >= 0)
                printf("config: %s (%s)\n", cfgpath,
                       stat(cfgpath, &st) == 0 ? "present" : "absent: defaults apply");
        if (cli_load_config(arg_config, &config) < 0) {
                config_release(&config);
                return EXIT_USAGE;
        }
        printf("interpreter:\n");
        show_interpreter(&config, PTC_MODE_PROJECT);
        show_interpreter(&config, PTC_MODE_STRICT);
        if (cli_build_registry(&config, NULL, NULL, &reg) >= 0) {
                names = registry_names(reg);
                printf("tools: %s\n", names ? names : "");
        }
        show_web(&config);
        pidfd = pidfd_open_compat(getpid());
        printf("supervision: %s\n",
               pidfd >= 0 ? "pidfd + epoll" : "SIGCHLD signalfd + epoll (no pidfd)");
        if (pidfd >= 0)
                close(pidfd);
        show_isolation(&config);
        show_terminal(&config);
        config_release(&config);
        return EXIT_OK;
}
