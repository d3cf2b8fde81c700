/* SPDX-License-Identifier: MIT */
/* clang-format off */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include "../lib/ptc-test.h"
/* clang-format on */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/buf.h"
#include "basic/diag.h"
#include "basic/macro.h"
#include "core/shell/shell-parse.h"
#include "core/tools/terminal-guard.h"

/*
 * One line per simple command, joined by " ; ": the command flags (B background,
 * S substitution, P subshell, N nested shell, F function body), '|', then the words with
 * the command word starred.
 */
static char *dump(const struct shell_parse *p)
{
        _cleanup_buf_ struct buf b = BUF_INIT(1 << 20);

        for (size_t i = 0; i < p->n_commands; i++) {
                const struct shell_command *c = &p->commands[i];

                if (i > 0)
                        assert_int_equal(buf_append_str(&b, " ; "), 0);
                assert_int_equal(buf_printf(&b, "%s%s%s%s%s|",
                                            c->flags & SHELL_CMD_BACKGROUND ? "B" : "",
                                            c->flags & SHELL_CMD_SUBSTITUTION ? "S" : "",
                                            c->flags & SHELL_CMD_SUBSHELL ? "P" : "",
                                            c->flags & SHELL_CMD_NESTED_SHELL ? "N" : "",
                                            c->flags & SHELL_CMD_FUNCTION ? "F" : ""),
                                 0);
                assert_null(c->argv[c->argc]);
                assert_true(c->cmd_index <= c->argc);
                for (size_t j = 0; j < c->argc; j++)
                        assert_int_equal(buf_printf(&b, "%s%s%s", j > 0 ? " " : "",
                                                    j == c->cmd_index ? "*" : "", c->argv[j]),
                                         0);
        }
        return buf_steal(&b, NULL);
}

static struct shell_parse *parse_ok(const char *s, unsigned flags)
{
        struct shell_parse *p = NULL;
        struct diag d = {};
        int r;

        r = shell_parse(s, strlen(s), flags, &p, &d);
        if (r < 0)
                fail_msg("cannot parse <%s>: %d %s", s, r, d.message);
        return p;
}

static void test_shell_parse_table(void **state)
{
        static const struct {
                const char *in, *out;
        } cases[] = {
                /* quotes */
                {"printf %s 'it'\"'\"'s $HOME `id` \"q\" & ;'",
                 "|*printf %s it's $HOME `id` \"q\" & ;"},
                {"curl -s 'https://api.example/x?a=1&b=2'",
                 "|*curl -s https://api.example/x?a=1&b=2"},
                {"echo \"a \\\"b\\\" \\$c \\d\"", "|*echo a \"b\" $c \\d"},
                {"echo $'a\\tb\\x41\\'\\u00e9'", "|*echo a\tbA'\xc3\xa9"},
                {"echo $\"loc\" a\\ b", "|*echo loc a b"},
                {"echo a#b # c & d", "|*echo a#b"},
                {"echo a \\\n && echo b", "|*echo a ; |*echo b"},
                /* operators */
                {"a && b || c; d | e |& f", "|*a ; |*b ; |*c ; |*d ; |*e ; |*f"},
                {"a & b", "B|*a ; |*b"},
                {"a && b & c", "B|*a ; B|*b ; |*c"},
                {"a\nb &\nc", "|*a ; B|*b ; |*c"},
                {"echo x 2>&1 >&2 &>/dev/null &>>f <&0 3>&- >|g <>h", "|*echo x"},
                {"sleep 1 2>&1 &", "B|*sleep 1"},
                {"> out", "|"},
                /* substitutions, recursively */
                {"echo $(id -u) `whoami`", "S|*id -u ; S|*whoami ; |*echo $(id -u) `whoami`"},
                {"echo \"$(nohup x &)\"", "BS|nohup *x ; |*echo $(nohup x &)"},
                {"echo `echo \\`id\\``", "S|*id ; S|*echo `id` ; |*echo `echo \\`id\\``"},
                {"echo ${x:-$(y)}", "S|*y ; |*echo ${x:-$(y)}"},
                {"diff <(sort a) >(cat)", "S|*sort a ; S|*cat ; |*diff <(sort a) >(cat)"},
                {"echo $((1 + (2 * 3))) $[4]", "|*echo $((1 + (2 * 3))) $[4]"},
                {"echo \"$(echo ')')\"", "S|*echo ) ; |*echo $(echo ')')"},
                {"x=$(case a in a) b;; esac)", "S|*b ; |x=$(case a in a) b;; esac)"},
                /* compound commands */
                {"(a; b) &", "BP|*a ; BP|*b"},
                {"{ a; b; } & c", "B|*a ; B|*b ; |*c"},
                {"((a); b)", "P|*a ; P|*b"},
                {"((i++)) && echo", "|*echo"},
                {"if a; then b; elif c; then d; else e; fi >log", "|*a ; |*b ; |*c ; |*d ; |*e"},
                {"while read l; do echo \"$l\"; done <f", "|*read l ; |*echo $l"},
                {"until a; do :; done", "|*a ; |*:"},
                {"for f in *.c $(ls); do cc \"$f\" & done", "S|*ls ; B|*cc $f"},
                {"for ((i = 0; i < 3; i++)); do b; done", "|*b"},
                {"for x\ndo b\ndone", "|*b"},
                {"select x in a b; do break; done", "|*break"},
                {"case $x in a|b) c;; (d) e;& *) ;; esac", "|*c ; |*e"},
                {"f() { uvicorn app; }; f", "F|*uvicorn app ; |*f"},
                {"function g { a; }", "F|*a"},
                {"[[ -f x && $y == z ]] && b", "|*[[ -f x && $y == z ]] ; |*b"},
                {"coproc cat", "B|*cat"},
                {"coproc NAME { a; }", "B|*a"},
                {"time -p a | time b", "|*a ; |time *b"},
                {"! time a", "|*a"},
                {"time", ""},
                {"{ { a; } }", "|*a"},
                /* here-documents */
                {"cat <<EOF | grep x\nnohup & $(x)\nEOF\necho done",
                 "|*cat ; |*grep x ; |*echo done"},
                {"cat <<-'E'\n\tz &\n\tE\nb", "|*cat ; |*b"},
                {"cat <<A <<B\na\nA\nb\nB\nc", "|*cat ; |*c"},
                {"cat <<<'x & y' &", "B|*cat"},
                {"cat <<EOF", "|*cat"},
                /* assignments and wrappers */
                {"A=1 B=\"x y\" cmd a=b", "|A=1 B=x y *cmd a=b"},
                {"a=(x $(y) z) c[1]=2 d+=3", "S|*y ; |a=(x $(y) z) c[1]=2 d+=3"},
                {"\"A\"=1 cmd", "|*A=1 cmd"},
                {"sudo -u root -E -- env -i A=2 nice -n 5 timeout -s KILL 10 x y",
                 "|sudo -u root -E -- env -i A=2 nice -n 5 timeout -s KILL 10 *x y"},
                {"exec nohup setsid stdbuf -oL time -f %e command builtin x",
                 "|exec nohup setsid stdbuf -oL time -f %e command builtin *x"},
                {"xargs -0 -n 1 -I{} rm {}", "|xargs -0 -n 1 -I{} *rm {}"},
                {"nice -10 ionice -c 3 x", "|nice -10 ionice -c 3 *x"},
                {"env", "|*env"},
                {"env -S 'a b'", "|*env -S a b"},
                {"command -v uvicorn", "|*command -v uvicorn"},
                {"sudo -l", "|*sudo -l"},
                {"/usr/bin/sudo x", "|/usr/bin/sudo *x"},
                {"$SUDO x", "|*$SUDO x"},
                {"exec >log 2>&1", "|*exec"},
                /* nested shells */
                {"bash -c 'a && b &'", "|*bash -c a && b & ; BN|*a ; BN|*b"},
                {"sh -euc \"vite\" name", "|*sh -euc vite name ; N|*vite"},
                {"bash -o pipefail -c 'x'", "|*bash -o pipefail -c x ; N|*x"},
                {"bash -c \"$CMD\"", "|*bash -c $CMD"},
                {"bash -c 'echo \"x'", "|*bash -c echo \"x"},
                {"bash script.sh -c x", "|*bash script.sh -c x"},
                {"eval 'a &' b", "|*eval a & b ; BN|*a ; N|*b"},
                {"timeout 5 bash -c a", "|timeout 5 *bash -c a ; N|*a"},
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct shell_parse *p = parse_ok(cases[i].in, 0);
                char *got = dump(p);

                if (strcmp(got, cases[i].out) != 0)
                        fail_msg("case %zu <%s>:\n  got  <%s>\n  want <%s>", i, cases[i].in, got,
                                 cases[i].out);
                free(got);
                shell_parse_free(p);
        }
}

static const struct shell_command *only_command(const struct shell_parse *p)
{
        assert_int_equal(p->n_commands, 1);
        return &p->commands[0];
}

static void test_shell_parse_word_flags(void **state)
{
        struct shell_parse *p =
                parse_ok("A=1 sudo -u x ls 'q' $v \"$(id)\" *.c {a,b} ~/x plain", 0);
        const struct shell_command *c = &p->commands[1];
        static const unsigned want[] = {
                SHELL_WORD_ASSIGNMENT,
                SHELL_WORD_WRAPPER,
                0,
                0,
                0,
                SHELL_WORD_QUOTED,
                SHELL_WORD_EXPANDS,
                SHELL_WORD_EXPANDS | SHELL_WORD_QUOTED,
                SHELL_WORD_GLOB,
                SHELL_WORD_GLOB,
                SHELL_WORD_EXPANDS,
                0,
        };

        assert_int_equal(p->n_commands, 2);
        assert_string_equal(p->commands[0].argv[0], "id");
        assert_int_equal(c->argc, ELEMENTSOF(want));
        assert_int_equal(c->cmd_index, 4);
        assert_string_equal(shell_command_word(c), "ls");
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                if (c->word_flags[i] != want[i])
                        fail_msg("word %zu <%s>: flags %#x, want %#x", i, c->argv[i],
                                 c->word_flags[i], want[i]);
        p = shell_parse_free(p);

        p = parse_ok("> f", 0);
        assert_null(shell_command_word(only_command(p)));
        assert_int_equal(only_command(p)->argc, 0);
        p = shell_parse_free(p);

        assert_string_equal(shell_basename("/usr/bin/env"), "env");
        assert_string_equal(shell_basename("env"), "env");
}

static void test_shell_parse_redirects(void **state)
{
        struct shell_parse *p =
                parse_ok("cmd 2>&1 >out &>>all <&0 3>&- <<-E <<<\"h s\" {fd}>x\n\tE", 0);
        const struct shell_command *c = only_command(p);
        static const struct {
                enum shell_redirect_op op;
                int fd;
                const char *target;
        } want[] = {
                {SHELL_REDIRECT_DUP_OUT, 2, "1"},       {SHELL_REDIRECT_OUT, -1, "out"},
                {SHELL_REDIRECT_APPEND_ERR, -1, "all"}, {SHELL_REDIRECT_DUP_IN, -1, "0"},
                {SHELL_REDIRECT_DUP_OUT, 3, "-"},       {SHELL_REDIRECT_HEREDOC_TAB, -1, "E"},
                {SHELL_REDIRECT_HERESTRING, -1, "h s"}, {SHELL_REDIRECT_OUT, -1, "x"},
        };

        assert_int_equal(c->argc, 1);
        assert_int_equal(c->n_redirects, ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                assert_int_equal(c->redirects[i].op, want[i].op);
                assert_int_equal(c->redirects[i].fd, want[i].fd);
                assert_string_equal(c->redirects[i].target, want[i].target);
        }
        assert_int_equal(c->redirects[6].target_flags, SHELL_WORD_QUOTED);
        shell_parse_free(p);
}

static void test_shell_parse_depth(void **state)
{
        struct shell_parse *p = parse_ok("echo $(a $(b $(c)))", 0);

        assert_int_equal(p->n_commands, 4);
        assert_int_equal(p->commands[0].depth, 3);
        assert_int_equal(p->commands[3].depth, 0);
        shell_parse_free(p);
}

static int parse_err(const char *s, unsigned flags)
{
        struct shell_parse *p = NULL;
        struct diag d = {};
        int r = shell_parse(s, strlen(s), flags, &p, &d);

        assert_null(p);
        if (r < 0)
                assert_true(d.message[0] != 0);
        return r;
}

static void test_shell_parse_syntax_errors(void **state)
{
        static const char *const bad[] = {
                "echo 'x",   "echo \"x", "echo $(x",    "echo `x", "echo ${x",
                "echo $'x",  "(a",       "a)",          "{ a",     "if a; then b",
                "a &; b",    "a | | b",  "&& a",        ";",       "echo a;;",
                "case x in", "for",      "while a; do", "f() x",   "echo (a)",
                "cat <",     "[[ a",     "x=(a",        "x=$((1)", "if a; then b; fi; fi",
                "a; }",      "then",     "a\n)",
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int r = parse_err(bad[i], 0);

                if (r != -EINVAL)
                        fail_msg("<%s>: %d, want -EINVAL", bad[i], r);
        }
        assert_int_equal(shell_parse("a\0b", 3, 0, &(struct shell_parse *){NULL}, NULL), -EINVAL);
}

static void test_shell_parse_complete_lines(void **state)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX / 2);
        struct shell_parse *p;
        char *got;

        /* bash -c runs line by line: the lines before the error run. */
        p = parse_ok("sleep 100 &\necho ok; (x\ny", SHELL_PARSE_COMPLETE_LINES);
        assert_true(p->syntax_error);
        got = dump(p);
        assert_string_equal(got, "B|*sleep 100");
        free(got);
        p = shell_parse_free(p);

        p = parse_ok("echo 'x", SHELL_PARSE_COMPLETE_LINES);
        assert_true(p->syntax_error);
        assert_int_equal(p->n_commands, 0);
        p = shell_parse_free(p);

        p = parse_ok("a\nb", SHELL_PARSE_COMPLETE_LINES);
        assert_false(p->syntax_error);
        assert_int_equal(p->n_commands, 2);
        p = shell_parse_free(p);

        /* Caps are not syntax errors. */
        for (int i = 0; i < 40; i++)
                assert_int_equal(buf_append_str(&b, "$("), 0);
        assert_int_equal(buf_append_str(&b, "a"), 0);
        for (int i = 0; i < 40; i++)
                assert_int_equal(buf_append_str(&b, ")"), 0);
        assert_int_equal(parse_err(buf_str(&b), SHELL_PARSE_COMPLETE_LINES), -ELOOP);
}

static void test_shell_parse_caps(void **state)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX / 2);
        struct shell_parse *p = NULL;
        struct diag d = {};
        char *s;

        /* Nesting: 32 levels parse, 33 do not. */
        for (int i = 0; i < SHELL_PARSE_DEPTH_MAX; i++)
                assert_int_equal(buf_append_str(&b, "( "), 0);
        assert_int_equal(buf_append_str(&b, "a"), 0);
        for (int i = 0; i < SHELL_PARSE_DEPTH_MAX; i++)
                assert_int_equal(buf_append_str(&b, " )"), 0);
        p = parse_ok(buf_str(&b), 0);
        assert_int_equal(p->commands[0].depth, SHELL_PARSE_DEPTH_MAX);
        p = shell_parse_free(p);
        buf_reset(&b);
        for (int i = 0; i <= SHELL_PARSE_DEPTH_MAX; i++)
                assert_int_equal(buf_append_str(&b, "{ "), 0);
        assert_int_equal(buf_append_str(&b, "a;"), 0);
        for (int i = 0; i <= SHELL_PARSE_DEPTH_MAX; i++)
                assert_int_equal(buf_append_str(&b, " };"), 0);
        assert_int_equal(parse_err(buf_str(&b), 0), -ELOOP);
        buf_reset(&b);
        for (int i = 0; i < 1000; i++)
                assert_int_equal(buf_append_str(&b, "f() ("), 0);
        assert_int_equal(buf_append_str(&b, ":"), 0);
        assert_int_equal(parse_err(buf_str(&b), 0), -ELOOP);
        buf_reset(&b);
        for (int i = 0; i < 1000; i++)
                assert_int_equal(buf_append_str(&b, "a=("), 0);
        assert_int_equal(parse_err(buf_str(&b), 0), -ELOOP);

        /* Input length. */
        s = malloc(SHELL_PARSE_INPUT_MAX + 1);
        assert_non_null(s);
        memset(s, 'a', SHELL_PARSE_INPUT_MAX + 1);
        assert_int_equal(shell_parse(s, SHELL_PARSE_INPUT_MAX + 1, 0, &p, &d), -E2BIG);
        assert_null(p);
        assert_non_null(strstr(d.message, "longer than"));
        p = NULL;
        assert_int_equal(shell_parse(s, SHELL_PARSE_INPUT_MAX, 0, &p, NULL), 0);
        assert_int_equal(only_command(p)->argc, 1);
        p = shell_parse_free(p);
        free(s);

        /* Words, commands, here-documents on one line. */
        buf_reset(&b);
        for (int i = 0; i <= SHELL_PARSE_WORDS_MAX; i++)
                assert_int_equal(buf_append_str(&b, "a "), 0);
        assert_int_equal(parse_err(buf_str(&b), 0), -E2BIG);
        buf_reset(&b);
        for (int i = 0; i <= SHELL_PARSE_COMMANDS_MAX; i++)
                assert_int_equal(buf_append_str(&b, ":;"), 0);
        assert_int_equal(parse_err(buf_str(&b), 0), -E2BIG);
        buf_reset(&b);
        for (int i = 0; i <= SHELL_PARSE_HEREDOCS_MAX; i++)
                assert_int_equal(buf_append_str(&b, "cat <<E;"), 0);
        assert_int_equal(parse_err(buf_str(&b), 0), -E2BIG);
        /* ... and just below them. */
        buf_reset(&b);
        for (int i = 0; i < SHELL_PARSE_COMMANDS_MAX; i++)
                assert_int_equal(buf_append_str(&b, ":;"), 0);
        p = parse_ok(buf_str(&b), 0);
        assert_int_equal(p->n_commands, SHELL_PARSE_COMMANDS_MAX);
        p = shell_parse_free(p);
}

/* --- the terminal guard --- */

enum { OK, DETACH, BACKGROUND, SERVER };

static void test_terminal_guard_table(void **state)
{
        static const struct {
                const char *cmd;
                int want;
        } cases[] = {
                /* Ordinary commands the old pattern scan refused. */
                {"printf %s 'it'\"'\"'s $HOME `id` \"q\" & ;'", OK},
                {"curl -s 'https://api.example/x?a=1&b=2'", OK},
                {"pip install uvicorn gunicorn", OK},
                {"grep -c nodemon package.json", OK},
                {"echo \"run vite later\"", OK},
                {"echo 'a & b'", OK},
                {"echo a\\&b", OK},
                {"git commit -m 'start the dev server & watch'", OK},
                {"npm install --save-dev nodemon vite", OK},
                {"yarn add next", OK},
                {"grep -rn 'python -m http.server' docs", OK},
                {"man setsid", OK},
                {"echo nohup disown", OK},
                {"cat docker-compose.yml | grep 'docker compose up'", OK},
                {"pgrep -f uvicorn || echo none", OK},
                {"which vite nodemon", OK},
                {"command -v uvicorn", OK},
                {"type -a gunicorn", OK},
                {"ls node_modules/.bin/vite", OK},
                {"cat <<EOF\nnohup x &\nnpm run dev\nEOF", OK},
                {"echo x # then nohup y &", OK},
                {"sed -i 's/&/and/g' f", OK},
                /* Ordinary commands with operators that are not a background '&'. */
                {"echo a && echo b", OK},
                {"echo a 2>&1", OK},
                {"echo x &>/dev/null", OK},
                {"make 2>&1 | tee log", OK},
                {"make |& tee log", OK},
                {"echo x >&2", OK},
                {"case a in a) echo;& b) echo;; esac", OK},
                {"[[ a && b ]] || echo", OK},
                {"(cd sub && make)", OK},
                {"x=$(date)&&echo $x", OK},
                /* Bounded commands of the tools the guard knows. */
                {"npm run build", OK},
                {"npm test", OK},
                {"npm run devtools", OK},
                {"yarn install", OK},
                {"vite build", OK},
                {"npx vite build --mode production", OK},
                {"next build", OK},
                {"docker compose up -d", OK},
                {"docker compose up --detach --build", OK},
                {"docker compose -f a.yml up -d web", OK},
                {"docker compose --project-name up ps", OK},
                {"docker compose up --wait", OK},
                {"docker compose down", OK},
                {"python3 -m pytest -q", OK},
                {"python -m pip install uvicorn", OK},
                {"python -c 'import http.server'", OK},
                {"python manage.py migrate", OK},
                {"flask routes", OK},
                {"rails db:migrate", OK},
                {"uv run --with uvicorn python x.py", OK},
                {"poetry run pytest", OK},
                {"php -r 'echo 1;'", OK},
                {"$SERVER --port 80", OK},
                {"yarn $'' --version", OK}, /* an empty script name (found by the fuzzer) */
                {"npm run ''", OK},
                /* The help exemption. */
                {"nohup --help", OK},
                {"uvicorn --version", OK},
                {"npm run dev -- -h", OK},
                /* Refused: nohup, setsid, disown. */
                {"nohup sleep 100 &", DETACH},
                {"nohup python3 app.py > log 2>&1", DETACH},
                {"setsid foo", DETACH},
                {"setsid -f sleep 100", DETACH},
                {"sleep 1; disown", DETACH},
                {"sudo -u www nohup x", DETACH},
                {"env A=1 nohup x", DETACH},
                {"/usr/bin/nohup x", DETACH},
                {"echo $(nohup x)", DETACH},
                {"bash -c 'nohup x'", DETACH},
                /* Refused: a background '&'. */
                {"sleep 100 &", BACKGROUND},
                {"sleep 1 & echo x", BACKGROUND},
                {"sleep 1&echo x", BACKGROUND},
                {"(sleep 30)& echo $!", BACKGROUND},
                {"{ sleep 1; } &", BACKGROUND},
                {"make && ./server &", BACKGROUND},
                {"for i in 1 2; do sleep $i & done", BACKGROUND},
                {"x=$(sleep 5 &)", BACKGROUND},
                {"sleep 1 2>&1 &", BACKGROUND},
                {"sleep 1 & # comment", BACKGROUND},
                {"coproc sleep 10", BACKGROUND},
                {"eval 'sleep 1 &'", BACKGROUND},
                {"sleep 100 &\necho \"unterminated", BACKGROUND},
                /* Refused: servers and watchers. */
                {"npm run dev", SERVER},
                {"npm start", SERVER},
                {"npm run start:prod", SERVER},
                {"npm --prefix web run dev", SERVER},
                {"yarn dev", SERVER},
                {"yarn workspace web start", SERVER},
                {"pnpm --filter web serve", SERVER},
                {"bun run watch", SERVER},
                {"NPX vite", SERVER},
                {"npx vite --port 3000", SERVER},
                {"vite", SERVER},
                {"vite preview", SERVER},
                {"next dev", SERVER},
                {"nodemon server.js", SERVER},
                {"uvicorn app:app --reload", SERVER},
                {"gunicorn -w 4 app:app", SERVER},
                {"/usr/local/bin/uvicorn app:app", SERVER},
                {"python -m http.server", SERVER},
                {"python3 -m http.server 8000", SERVER},
                {"python3.12 -u -m uvicorn app:app", SERVER},
                {"python -m flask run", SERVER},
                {"python manage.py runserver", SERVER},
                {"flask run", SERVER},
                {"flask --app x run --port 80", SERVER},
                {"rails s", SERVER},
                {"bin/rails server", SERVER},
                {"bundle exec rails s", SERVER},
                {"php -S localhost:8000", SERVER},
                {"php artisan serve", SERVER},
                {"docker compose up", SERVER},
                {"docker compose -f a.yml up --build", SERVER},
                {"docker-compose up web", SERVER},
                {"docker compose watch", SERVER},
                {"uv run uvicorn app:app", SERVER},
                {"poetry run gunicorn app", SERVER},
                {"cd web && npm run dev", SERVER},
                {"echo start; npm run dev | tee log", SERVER},
                {"FOO=1 sudo -E env -i A=2 nice -n 5 timeout -s KILL 10 uvicorn app:app", SERVER},
                {"timeout 60 npm start", SERVER},
                {"exec nodemon", SERVER},
                {"xargs -n1 nodemon", SERVER},
                {"bash -c 'npm run dev'", SERVER},
                {"sh -c \"cd web; vite\"", SERVER},
                {"if true; then npm start; fi", SERVER},
                {"serve() { uvicorn app; }; serve", SERVER},
                {"echo $(python -m http.server)", SERVER},
        };
        static const char *const texts[] = {
                [DETACH] = "terminal() runs commands in the foreground only: nohup, disown and "
                           "setsid cannot keep a process alive after the call, because everything "
                           "the command started is killed when it finishes. Run the program in "
                           "the foreground with a timeout instead.",
                [BACKGROUND] = "terminal() runs commands in the foreground only: a job put in the "
                               "background with '&' is killed when the command finishes. Run the "
                               "steps one after another in the foreground, each with a timeout.",
                [SERVER] = "This command looks like it starts a long-running server or watcher, "
                           "which would only block until the timeout: terminal() is foreground "
                           "only. Run bounded commands (a build, a test run, a single request) "
                           "instead, and start servers outside the script.",
        };
        size_t n_ok = 0, n_refused = 0;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const char *g = (const char *) 1;

                assert_int_equal(terminal_guard_check(cases[i].cmd, &g), 0);
                if (cases[i].want == OK) {
                        n_ok++;
                        if (g)
                                fail_msg("<%s> refused: %s", cases[i].cmd, g);
                } else {
                        n_refused++;
                        if (!g || strcmp(g, texts[cases[i].want]) != 0)
                                fail_msg("<%s>: got %s, want %.50s", cases[i].cmd,
                                         g ? g : "(allowed)", texts[cases[i].want]);
                }
        }
        assert_true(n_ok >= 30 && n_refused >= 30);
}

/* A command the parser cannot take is not refused on a guess: bash reports the error. */
static void test_terminal_guard_unparsed(void **state)
{
        _cleanup_buf_ struct buf b = BUF_INIT(SIZE_MAX / 2);
        const char *g = (const char *) 1;

        assert_int_equal(terminal_guard_check("echo 'unbalanced & nohup x", &g), 0);
        assert_null(g);
        g = (const char *) 1;
        assert_int_equal(terminal_guard_check("npm run dev )", &g), 0);
        assert_null(g);
        for (int i = 0; i < 40; i++)
                assert_int_equal(buf_append_str(&b, "$("), 0);
        assert_int_equal(buf_append_str(&b, "nohup x &"), 0);
        for (int i = 0; i < 40; i++)
                assert_int_equal(buf_append_str(&b, ")"), 0);
        g = (const char *) 1;
        assert_int_equal(terminal_guard_check(buf_str(&b), &g), 0);
        assert_null(g);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_shell_parse_table),
                cmocka_unit_test(test_shell_parse_word_flags),
                cmocka_unit_test(test_shell_parse_redirects),
                cmocka_unit_test(test_shell_parse_depth),
                cmocka_unit_test(test_shell_parse_syntax_errors),
                cmocka_unit_test(test_shell_parse_complete_lines),
                cmocka_unit_test(test_shell_parse_caps),
                cmocka_unit_test(test_terminal_guard_table),
                cmocka_unit_test(test_terminal_guard_unparsed),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
