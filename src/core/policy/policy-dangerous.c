/* SPDX-License-Identifier: MIT */
/*
 * The built-in dangerous list: commands that are often what was meant but do harm when
 * they are not (recursive deletes, world-writable modes, SQL DROP, piping a download into
 * a shell, writes to /etc and to the user's shell and SSH files, forced git history
 * rewrites, ...). policy.dangerous decides what they get: ask by default, as the seed.
 * The descriptions are the seed's (docs/policy.md lists them).
 *
 * As the hardline list, each check reads the parsed simple command, not the raw string:
 * `grep -r "rm -rf" .` and `echo "DROP TABLE"` are no dangerous commands. SQL counts in
 * the commands of a database client (psql, mysql, sqlite3, ...): its arguments, a here-string,
 * and for a here-document (whose body the parser skips) the raw text.
 */

#include "core/policy/policy-internal.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

bool policy_is_block_device(const char *w)
{
        static const char *const prefixes[] = {"sd", "hd",  "vd",   "xvd", "nvme",   "mmcblk",
                                               "md", "dm-", "loop", "nbd", "mapper/"};
        const char *d;

        while (w[0] == '/' && w[1] == '/')
                w++;
        if (strncmp(w, "/dev/", 5) != 0)
                return false;
        d = w + 5;
        for (size_t i = 0; i < ELEMENTSOF(prefixes); i++)
                if (strncmp(d, prefixes[i], strlen(prefixes[i])) == 0)
                        return true;
        if (strncmp(d, "disk/by-", 8) == 0)
                return true;
        if (d[0] == 'r')
                d++;
        return strncmp(d, "disk", 4) == 0 && isdigit((unsigned char) d[4]);
}

/* Under /etc (or macOS's /private/etc). */
static bool is_system_config(const char *w)
{
        return strncmp(w, "/etc/", 5) == 0 || strncmp(w, "/private/etc/", 13) == 0;
}

/* The user's SSH directory, shell start-up files and credential files, as a command spells
 * them (~, $HOME, ${HOME}) or with the home's path. */
static bool is_user_sensitive(const char *w, const char *home)
{
        static const char *const homes[] = {"~/", "$HOME/", "${HOME}/"};
        static const char *const files[] = {".ssh/",    ".ssh",          ".bashrc",   ".zshrc",
                                            ".profile", ".bash_profile", ".zprofile", ".netrc",
                                            ".pgpass",  ".npmrc",        ".pypirc"};
        const char *rest = NULL;
        size_t hl = home ? strlen(home) : 0;

        for (size_t i = 0; i < ELEMENTSOF(homes) && !rest; i++)
                if (strncmp(w, homes[i], strlen(homes[i])) == 0)
                        rest = w + strlen(homes[i]);
        if (!rest && hl > 1 && strncmp(w, home, hl) == 0 && w[hl] == '/')
                rest = w + hl + 1;
        if (!rest)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                size_t n = strlen(files[i]);

                if (strncmp(rest, files[i], n) == 0 &&
                    (files[i][n - 1] == '/' || rest[n] == 0 || rest[n] == '/'))
                        return true;
        }
        return false;
}

static bool is_write_redirect(const struct shell_redirect *r)
{
        return r->op == SHELL_REDIRECT_OUT || r->op == SHELL_REDIRECT_APPEND ||
               r->op == SHELL_REDIRECT_CLOBBER || r->op == SHELL_REDIRECT_OUT_ERR ||
               r->op == SHELL_REDIRECT_APPEND_ERR || r->op == SHELL_REDIRECT_IN_OUT;
}

static const char *check_redirects(const struct command_view *v, const char *name)
{
        for (size_t i = 0; i < v->cmd->n_redirects; i++) {
                const struct shell_redirect *r = &v->cmd->redirects[i];

                if (!is_write_redirect(r))
                        continue;
                if (is_system_config(r->target))
                        return "overwrite system config";
                if (is_user_sensitive(r->target, v->home))
                        return "overwrite system file via redirection";
        }
        return NULL;
}

static const char *check_rm(const struct command_view *v, const char *name)
{
        const char *first = policy_operand(v->cmd, 0);

        if (strcmp(name, "rm") != 0)
                return NULL;
        if (first && first[0] == '/')
                return "delete in root path";
        if (policy_has_option(v->cmd, 'r', "--recursive") || policy_has_option(v->cmd, 'R', NULL))
                return "recursive delete";
        for (size_t i = 0; i < v->cmd->cmd_index; i++)
                if ((v->cmd->word_flags[i] & SHELL_WORD_WRAPPER) &&
                    strcmp(shell_basename(v->cmd->argv[i]), "xargs") == 0)
                        return "xargs with rm";
        return NULL;
}

static const char *check_chmod_then_run(const struct command_view *v, const char *name);

/* A mode that lets others write: octal with the others' write bit (777, 0666, 766, 1777),
 * or symbolic o/a with + or = and w (o+w, a=rwx, u+x,o+w). */
static bool is_world_writable_mode(const char *m)
{
        size_t n = strlen(m);
        const char *p;

        if (n > 0 && n <= 5 && strspn(m, "01234567") == n)
                return ((m[n - 1] - '0') & 2) != 0;
        for (p = m; *p; p = *p ? p + 1 : p) {
                const char *e = strchrnul(p, ',');
                const char *op = p;

                while (op < e && strchr("ugoa", *op))
                        op++;
                if (op < e && (*op == '+' || *op == '=') &&
                    (memchr(p, 'o', (size_t) (op - p)) || memchr(p, 'a', (size_t) (op - p))) &&
                    memchr(op, 'w', (size_t) (e - op)))
                        return true;
                p = e;
        }
        return false;
}

static const char *check_chmod(const struct command_view *v, const char *name)
{
        const char *mode = policy_operand(v->cmd, 0);

        if (strcmp(name, "chmod") != 0 || !mode)
                return NULL;
        return is_world_writable_mode(mode) ? "world/other-writable permissions"
                                            : check_chmod_then_run(v, name);
}

static const char *check_chown(const struct command_view *v, const char *name)
{
        const char *owner = policy_operand(v->cmd, 0);

        if (strcmp(name, "chown") == 0 && owner && strncmp(owner, "root", 4) == 0 &&
            (owner[4] == 0 || owner[4] == ':') && (policy_has_option(v->cmd, 'R', "--recursive")))
                return "recursive chown to root";
        return NULL;
}

/* Upper-case SQL words of @s in order, looking for DROP TABLE/DATABASE, DELETE FROM without
 * a WHERE on the same line, TRUNCATE. */
static const char *sql_in(const char *s)
{
        char prev[16] = "";
        bool delete_from = false;

        for (const char *p = s;; p++) {
                char word[16];
                size_t n = 0;

                if (*p == 0 || *p == '\n') {
                        if (delete_from)
                                return "SQL DELETE without WHERE";
                        if (*p == 0)
                                return NULL;
                        prev[0] = 0;
                        continue;
                }
                if (!isalpha((unsigned char) *p) ||
                    (p > s && (isalnum((unsigned char) p[-1]) || p[-1] == '_')))
                        continue;
                while (isalpha((unsigned char) p[n]) || p[n] == '_')
                        n++;
                if (n < sizeof(word)) {
                        for (size_t i = 0; i < n; i++)
                                word[i] = (char) toupper((unsigned char) p[i]);
                        word[n] = 0;
                        if (strcmp(prev, "DROP") == 0 &&
                            (strcmp(word, "TABLE") == 0 || strcmp(word, "DATABASE") == 0))
                                return "SQL DROP";
                        if (strcmp(prev, "DELETE") == 0 && strcmp(word, "FROM") == 0)
                                delete_from = true;
                        if (strcmp(word, "WHERE") == 0)
                                delete_from = false;
                        if (strcmp(prev, "TRUNCATE") == 0)
                                return "SQL TRUNCATE";
                        memcpy(prev, word, n + 1);
                } else
                        prev[0] = 0;
                p += n - 1;
        }
}

static bool is_sql_client(const char *name)
{
        static const char *const clients[] = {"psql",    "mysql",  "mariadb",   "sqlite3",
                                              "sqlcmd",  "duckdb", "cockroach", "clickhouse-client",
                                              "mongosh", "pgcli",  "mycli"};

        for (size_t i = 0; i < ELEMENTSOF(clients); i++)
                if (strcmp(name, clients[i]) == 0)
                        return true;
        return false;
}

static const char *check_sql(const struct command_view *v, const char *name)
{
        const char *what;

        /* SQL is run by a client: `echo 'DROP TABLE t'` or a grep for it is text. */
        if (!is_sql_client(name))
                return NULL;
        for (size_t i = v->cmd->cmd_index + 1; i < v->cmd->argc; i++)
                if ((what = sql_in(v->cmd->argv[i])))
                        return what;
        for (size_t i = 0; i < v->cmd->n_redirects; i++) {
                const struct shell_redirect *r = &v->cmd->redirects[i];

                if (r->op == SHELL_REDIRECT_HERESTRING && (what = sql_in(r->target)))
                        return what;
                /* A here-document's body is not in the parse: the raw text is read. */
                if ((r->op == SHELL_REDIRECT_HEREDOC || r->op == SHELL_REDIRECT_HEREDOC_TAB) &&
                    (what = sql_in(v->raw)))
                        return what;
        }
        return NULL;
}

static const char *check_copy_into_etc(const struct command_view *v, const char *name)
{
        const char *last = policy_last_word(v->cmd);

        if ((strcmp(name, "cp") == 0 || strcmp(name, "mv") == 0 || strcmp(name, "install") == 0) &&
            last && is_system_config(last))
                return "copy/move file into /etc/";
        if (strcmp(name, "sed") == 0 && last && is_system_config(last)) {
                if (policy_has_option(v->cmd, 'i', NULL))
                        return "in-place edit of system config";
                if (policy_has_option(v->cmd, 0, "--in-place"))
                        return "in-place edit of system config (long flag)";
        }
        if (strcmp(name, "tee") == 0)
                for (size_t i = 0; policy_operand(v->cmd, i); i++)
                        if (is_system_config(policy_operand(v->cmd, i)) ||
                            is_user_sensitive(policy_operand(v->cmd, i), v->home) ||
                            policy_is_block_device(policy_operand(v->cmd, i)))
                                return "overwrite system file via tee";
        return NULL;
}

static const char *check_services_and_kills(const struct command_view *v, const char *name)
{
        const char *op = policy_operand(v->cmd, 0);

        if (strcmp(name, "systemctl") == 0 && op &&
            (strcmp(op, "stop") == 0 || strcmp(op, "restart") == 0 || strcmp(op, "disable") == 0 ||
             strcmp(op, "mask") == 0))
                return "stop/restart system service";
        if (strcmp(name, "pkill") == 0 || strcmp(name, "killall") == 0) {
                for (size_t i = 0; (op = policy_operand(v->cmd, i)); i++)
                        if (strcmp(op, "ptc") == 0 || strncmp(op, "ptc ", 4) == 0)
                                return "kill ptc process (self-termination)";
                for (size_t i = v->cmd->cmd_index + 1; i < v->cmd->argc; i++) {
                        const char *w = v->cmd->argv[i];

                        if (strcmp(w, "-9") == 0 || strcmp(w, "-KILL") == 0 ||
                            strcmp(w, "-SIGKILL") == 0 || strcmp(w, "--signal=KILL") == 0 ||
                            ((strcmp(w, "-s") == 0 || strcmp(w, "--signal") == 0) &&
                             i + 1 < v->cmd->argc &&
                             (strcmp(v->cmd->argv[i + 1], "KILL") == 0 ||
                              strcmp(v->cmd->argv[i + 1], "9") == 0 ||
                              strcmp(v->cmd->argv[i + 1], "SIGKILL") == 0)))
                                return "force kill processes";
                }
        }
        return NULL;
}

static bool is_fetcher(const char *name)
{
        return strcmp(name, "curl") == 0 || strcmp(name, "wget") == 0;
}

/* A download (or a decoder) and a shell that reads its script from stdin, in one string. */
static const char *check_piped_shell(const struct command_view *v, const char *name)
{
        const struct shell_parse *p = v->parse;
        bool fetch = false, decode = false;

        if (!policy_is_stdin_shell(v->cmd))
                return NULL;
        for (size_t i = 0; i < p->n_commands; i++) {
                const struct shell_command *c = &p->commands[i];
                const char *n = policy_command_name(c);

                fetch = fetch || is_fetcher(n);
                decode = decode || ((strcmp(n, "base64") == 0 || strcmp(n, "base32") == 0) &&
                                    (policy_has_option(c, 'd', "--decode") ||
                                     policy_has_option(c, 'D', NULL)));
                decode = decode || (strcmp(n, "xxd") == 0 && policy_has_option(c, 'r', NULL));
        }
        if (fetch)
                return "pipe remote content to shell";
        if (decode)
                return "pipe decoded content to shell (possible command obfuscation)";
        return NULL;
}

/* bash <(curl ...), source <(curl ...), eval "$(curl ...)": a download run as a script. */
static const char *check_substituted_download(const struct command_view *v, const char *name)
{
        bool runs_text =
                strcmp(name, "eval") == 0 || strcmp(name, "source") == 0 || strcmp(name, ".") == 0;
        bool shell = strcmp(name, "sh") == 0 || strcmp(name, "bash") == 0 ||
                     strcmp(name, "zsh") == 0 || strcmp(name, "ksh") == 0 ||
                     strcmp(name, "dash") == 0;

        if (!runs_text && !shell)
                return NULL;
        for (size_t i = v->cmd->cmd_index + 1; i < v->cmd->argc; i++) {
                const char *w = v->cmd->argv[i];

                if (!(v->cmd->word_flags[i] & SHELL_WORD_EXPANDS) ||
                    !(strstr(w, "curl") || strstr(w, "wget")))
                        continue;
                if (strncmp(w, "<(", 2) == 0)
                        return runs_text ? "execute remote content via command substitution"
                                         : "execute remote script via process substitution";
                /* eval "$(curl ...)", bash -c "$(curl ...)": the download is the script. */
                if ((runs_text || policy_has_option(v->cmd, 'c', NULL)) &&
                    (strstr(w, "$(") || strchr(w, '`')))
                        return "execute remote content via command substitution";
        }
        return NULL;
}

static const char *check_find(const struct command_view *v, const char *name)
{
        const struct shell_command *c = v->cmd;

        for (size_t i = c->cmd_index + 1; strcmp(name, "find") == 0 && i < c->argc; i++) {
                const char *w = c->argv[i];

                if (strcmp(w, "-delete") == 0)
                        return "find -delete";
                if ((strcmp(w, "-exec") == 0 || strcmp(w, "-execdir") == 0 ||
                     strcmp(w, "-ok") == 0 || strcmp(w, "-okdir") == 0) &&
                    i + 1 < c->argc && strcmp(shell_basename(c->argv[i + 1]), "rm") == 0)
                        return "find -exec/-execdir rm";
        }
        return NULL;
}

/* git's subcommand: the first operand after its global options (-C DIR, -c K=V, ...). */
static size_t git_subcommand(const struct shell_command *c)
{
        for (size_t i = c->cmd_index + 1; i < c->argc; i++) {
                const char *w = c->argv[i];

                if (strcmp(w, "-C") == 0 || strcmp(w, "-c") == 0 || strcmp(w, "--git-dir") == 0 ||
                    strcmp(w, "--work-tree") == 0 || strcmp(w, "--namespace") == 0) {
                        i++;
                        continue;
                }
                if (!policy_is_option(w))
                        return i;
        }
        return c->argc;
}

static const char *check_git(const struct command_view *v, const char *name)
{
        const struct shell_command *c = v->cmd;
        size_t s = git_subcommand(c);
        const char *sub = s < c->argc ? c->argv[s] : "";

        if (strcmp(name, "git") != 0)
                return NULL;
        for (size_t i = s + 1; i < c->argc; i++) {
                const char *w = c->argv[i];
                bool shortopt = w[0] == '-' && w[1] != '-';

                if (strcmp(sub, "reset") == 0 && strcmp(w, "--hard") == 0)
                        return "git reset --hard (destroys uncommitted changes)";
                if (strcmp(sub, "push") == 0 &&
                    (strncmp(w, "--force", 7) == 0 || (shortopt && strchr(w, 'f')) ||
                     (w[0] == '+' && w[1])))
                        return "git force push (rewrites remote history)";
                if (strcmp(sub, "clean") == 0 &&
                    ((shortopt && strchr(w, 'f')) || strcmp(w, "--force") == 0))
                        return "git clean with force (deletes untracked files)";
                if (strcmp(sub, "branch") == 0 &&
                    (strcmp(w, "-D") == 0 ||
                     (strcmp(w, "--delete") == 0 && policy_has_option(c, 'f', "--force"))))
                        return "git branch force delete";
        }
        return NULL;
}

/* chmod +x FILE, then ./FILE in the same string. */
static const char *check_chmod_then_run(const struct command_view *v, const char *name)
{
        const char *mode = policy_operand(v->cmd, 0);

        if (strcmp(name, "chmod") != 0 || !mode || !strstr(mode, "+x"))
                return NULL;
        for (const struct shell_command *c = v->cmd + 1;
             c < v->parse->commands + v->parse->n_commands; c++) {
                const char *w = shell_command_word(c);

                if (w && strncmp(w, "./", 2) == 0)
                        return "chmod +x followed by immediate execution";
        }
        return NULL;
}

static const char *check_interpreter_heredoc(const struct command_view *v, const char *name)
{
        static const char *const interpreters[] = {"python", "python2", "python3",
                                                   "perl",   "ruby",    "node"};
        bool interp = false;

        for (size_t i = 0; i < ELEMENTSOF(interpreters); i++)
                interp = interp || strcmp(name, interpreters[i]) == 0;
        if (!interp && strncmp(name, "python3.", 8) != 0)
                return NULL;
        for (size_t i = 0; i < v->cmd->n_redirects; i++)
                if (v->cmd->redirects[i].op == SHELL_REDIRECT_HEREDOC ||
                    v->cmd->redirects[i].op == SHELL_REDIRECT_HEREDOC_TAB)
                        return "script execution via heredoc";
        return NULL;
}

static const char *check_dd(const struct command_view *v, const char *name)
{
        for (size_t i = v->cmd->cmd_index + 1; strcmp(name, "dd") == 0 && i < v->cmd->argc; i++)
                if (strncmp(v->cmd->argv[i], "if=", 3) == 0)
                        return "disk copy";
        return NULL;
}

static const char *check_metadata(const struct command_view *v, const char *name)
{
        static const char *const endpoints[] = {"169.254.169.254", "100.100.100.200",
                                                "metadata.google.internal", "fd00:ec2::254"};

        for (size_t i = v->cmd->cmd_index; i < v->cmd->argc; i++)
                for (size_t j = 0; j < ELEMENTSOF(endpoints); j++)
                        if (strstr(v->cmd->argv[i], endpoints[j]))
                                return "cloud metadata endpoint access (instance credentials)";
        return NULL;
}

typedef const char *(*check_fn)(const struct command_view *v, const char *name);

/* In the seed's order, so a command that is several things gets the seed's description. */
static const check_fn checks[] = {
        check_rm,
        check_chmod,
        check_chown,
        check_dd,
        check_sql,
        check_redirects,
        check_services_and_kills,
        check_piped_shell,
        check_substituted_download,
        check_copy_into_etc,
        check_find,
        check_interpreter_heredoc,
        check_git,
        check_metadata,
};

const char *policy_dangerous(const struct command_view *v)
{
        const char *name = policy_command_name(v->cmd), *what;

        for (size_t i = 0; i < ELEMENTSOF(checks); i++)
                if ((what = checks[i](v, name)))
                        return what;
        return NULL;
}
