/* SPDX-License-Identifier: MIT */
/*
 * The probes of `ptc doctor`, each one section of the report: they ask the
 * modules that do the work (spawn's interpreter resolution, the web
 * providers, the sandbox probe, the cgroup base, the terminal's pid
 * namespace), so the report says what a run would really get.
 */

#include "core/doctor/doctor.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "basic/buf.h"
#include "basic/diag.h"
#include "basic/path-util.h"
#include "basic/process-util.h"
#include "basic/strv.h"
#include "core/command/pidns-init.h"
#include "core/policy/path-protect.h"
#include "core/sandbox/cgroup.h"
#include "core/sandbox/exec-notify.h"
#include "core/sandbox/landlock.h"
#include "core/sandbox/sandbox.h"
#include "core/spawn/interpreter.h"
#include "core/web/search-providers.h"
#include "core/web/web-module.h"
#include "ptc-version.h"

static int show_config(struct buf *b, const struct doctor_input *in)
{
        struct stat st;

        if (in->config_none)
                return buf_printf(b, "config: none (not read)\n");
        if (!in->config_path)
                return 0;
        if (in->config_explicit)
                return buf_printf(b, "config: %s (--config)\n", in->config_path);
        return buf_printf(b, "config: %s (%s)\n", in->config_path,
                          stat(in->config_path, &st) == 0 ? "present" : "absent: defaults apply");
}

static int show_interpreter(struct buf *b, const struct ptc_config *c, enum ptc_mode mode)
{
        _cleanup_free_ char *path = NULL, *version = NULL;
        struct diag d = {};

        if (interpreter_resolve(c, mode, &path, &d) < 0)
                return buf_printf(b, "  %-8s NOT FOUND: %s\n", config_mode_to_string(mode),
                                  d.message);
        if (interpreter_version(path, &version) < 0)
                return buf_printf(b, "  %-8s %s (does not run)\n", config_mode_to_string(mode),
                                  path);
        return buf_printf(b, "  %-8s %s (Python %s)\n", config_mode_to_string(mode), path, version);
}

/*
 * Which provider web_search and web_extract would use, and why not when none; both need the
 * web module (loaded here, as a web tool would), so a module that does not load is a problem
 * line for each.
 */
static int show_web(struct buf *b, const struct ptc_config *c)
{
        _cleanup_free_ char *pdftotext = find_in_path("pdftotext");
        struct diag md = {};
        const struct web_module *m = web_module_get(&md);
        struct web_provider p;
        struct diag d = {};
        int k = 0;

        k |= buf_printf(b, "web:\n");
        if (web_search_provider_resolve(c, &p, &d) < 0)
                k |= buf_printf(b, "  web_search   off: %s\n", d.message);
        else if (!m)
                k |= buf_printf(b, "  web_search   %s: %s\n", p.name, md.message);
        else
                k |= buf_printf(b, "  web_search   %s (%s)%s\n", p.name, p.base_url,
                                c->search_provider ? "" : ", chosen by the credential present");
        d = (struct diag){};
        if (web_extract_provider_resolve(c, &p, &d) < 0)
                k |= buf_printf(b, "  web_extract  error: %s\n", d.message);
        else if (!m)
                k |= buf_printf(b, "  web_extract  %s\n", md.message);
        else if (p.kind == WEB_PROVIDER_NONE)
                k |= buf_printf(b,
                                "  web_extract  builtin (libcurl + gumbo; PDF: %s); private URLs "
                                "%s\n",
                                pdftotext ? pdftotext : "no pdftotext, PDFs are refused",
                                c->allow_private_urls ? "allowed" : "blocked");
        else
                k |= buf_printf(b, "  web_extract  %s (%s)\n", p.name, p.base_url);
        return k;
}

static int show_supervision(struct buf *b)
{
        int pidfd = pidfd_open_compat(getpid()), k;

        k = buf_printf(b, "supervision: %s\n",
                       pidfd >= 0 ? "pidfd + epoll" : "SIGCHLD signalfd + epoll (no pidfd)");
        if (pidfd >= 0)
                close(pidfd);
        return k;
}

static int show_isolation(struct buf *b, const struct ptc_config *c)
{
        struct sandbox_probe p;
        bool all = true;
        int k = 0;

        sandbox_probe(&p);
        k |= buf_printf(b, "isolation layers (strict needs all; auto uses those that work):\n");
        for (int l = 0; l < _SANDBOX_LAYER_MAX; l++) {
                all = all && p.works[l];
                if (l == SANDBOX_LAYER_LANDLOCK && p.works[l])
                        k |= buf_printf(b, "  %-11s works (ABI %d)\n", sandbox_layer_to_string(l),
                                        p.landlock_abi);
                else if (p.works[l])
                        k |= buf_printf(b, "  %-11s works\n", sandbox_layer_to_string(l));
                else
                        k |= buf_printf(b, "  %-11s does not work: %s\n",
                                        sandbox_layer_to_string(l), p.why[l]);
        }
        k |= buf_printf(b, "  %-11s %s%s\n", "cgroup",
                        cgroup_base()->path ? "" : "not used: ", cgroup_base()->why);
        k |= buf_printf(b, "isolation: configured %s, effective ",
                        config_isolation_to_string(c->isolation));
        if (c->isolation == PTC_ISOLATION_NONE)
                k |= buf_printf(b, "none\n");
        else if (all)
                k |= buf_printf(b, "strict (every layer)\n");
        else if (c->isolation == PTC_ISOLATION_STRICT)
                k |= buf_printf(b, "none: strict cannot be set up here, runs fail\n");
        else {
                const char *sep = "";

                k |= buf_printf(b, "partial (");
                for (int l = 0; l < _SANDBOX_LAYER_MAX; l++)
                        if (p.works[l]) {
                                k |= buf_printf(b, "%s%s", sep, sandbox_layer_to_string(l));
                                sep = ", ";
                        }
                k |= buf_printf(b, ")\n");
        }
        return k;
}

/* What confines terminal commands (docs/isolation.md, the tools' side). */
static int show_terminal(struct buf *b, const struct ptc_config *c)
{
        int r;

        if (c->terminal_strict)
                return buf_printf(b,
                                  "terminal: isolation strict: each command in the script's "
                                  "sandbox (network %s); a layer missing above fails the call\n",
                                  c->terminal_network ? "on" : "off");
        if (c->isolation == PTC_ISOLATION_NONE)
                return buf_printf(b, "terminal: commands run as ptc's user (isolation none)\n");
        if (geteuid() != 0)
                return buf_printf(b, "terminal: commands run as ptc's user; ptc is non-dumpable, "
                                     "so they cannot read its environment or memory\n");
        r = pidns_probe();
        if (r < 0)
                return buf_printf(b,
                                  "terminal: commands run as root without a pid namespace (%s): "
                                  "they can see ptc\n",
                                  strerror(-r));
        return buf_printf(b, "terminal: commands run as root, each in its own pid namespace (ptc "
                             "is not visible to them)\n");
}

/*
 * Whether the policy's deny rules on write_file/patch paths bind terminal commands and the
 * script's own writes here (core/policy/path-protect.h): Landlock, or why not.
 */
static int show_path_protect(struct buf *b, const struct ptc_config *c)
{
        const unsigned who = PATH_PROTECT_TERMINAL |
                             (c->isolation != PTC_ISOLATION_NONE ? PATH_PROTECT_SCRIPT : 0);
        _cleanup_strv_free_ char **lines = NULL;
        int abi = landlock_abi(), k = 0;

        if (!path_protect_wanted(c))
                return buf_printf(b, "path rules: none (no deny rule on write_file or patch "
                                     "paths)\n");
        if (path_protect_describe(c, abi, who, &lines) < 0 ||
            (!(who & PATH_PROTECT_SCRIPT) &&
             path_protect_unbound(c, "isolation none", PATH_PROTECT_SCRIPT, &lines) < 0))
                return -ENOMEM;
        if (abi >= 1)
                k |= buf_printf(b,
                                "path rules: deny rules on write_file/patch paths bind %s "
                                "through Landlock (ABI %d)\n",
                                who & PATH_PROTECT_SCRIPT
                                        ? "terminal commands and the script's own writes"
                                        : "terminal commands",
                                abi);
        for (char **l = lines; l && *l; l++)
                k |= buf_printf(b, "  warning   %s\n", *l);
        return k;
}

/* Whether terminal rules are judged on each exec (exec-notify.h), or on the text only. */
static int show_terminal_execs(struct buf *b)
{
        char why[256];

        if (!exec_notify_is_available(why, sizeof(why)))
                return buf_printf(b, "terminal rules: judged on the command text only (%s)\n", why);
        return buf_printf(b,
                          "terminal rules: judged on every program a command runs (seccomp user "
                          "notification)%s\n",
                          geteuid() != 0 ? "; commands run with NO_NEW_PRIVS (setuid programs "
                                           "such as sudo gain nothing)"
                                         : "");
}

int doctor_report(const struct doctor_input *in, char **ret)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX / 2);
        const struct ptc_config *c = in->config;
        struct utsname u;
        int k = 0;

        k |= buf_printf(&b, "ptc %s\n", PTC_VERSION);
        if (uname(&u) == 0)
                k |= buf_printf(&b, "kernel: %s %s\n", u.sysname, u.release);
        k |= show_config(&b, in);
        k |= buf_printf(&b, "interpreter:\n");
        k |= show_interpreter(&b, c, PTC_MODE_PROJECT);
        k |= show_interpreter(&b, c, PTC_MODE_STRICT);
        if (in->tools)
                k |= buf_printf(&b, "tools: %s\n", in->tools);
        k |= show_web(&b, c);
        k |= show_supervision(&b);
        k |= show_isolation(&b, c);
        k |= show_terminal(&b, c);
        k |= show_path_protect(&b, c);
        k |= show_terminal_execs(&b);
        if (k)
                return -ENOMEM;
        *ret = buf_steal(&b, NULL);
        return *ret ? 0 : -ENOMEM;
}
