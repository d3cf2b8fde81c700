/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Functions that are easy to misuse (unbounded copies, hidden global state,
 * no error reporting). Using one is a compile error; see docs/CODING_STYLE.md.
 */

#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef atoi
#define atoi(x) BANNED(atoi)
#undef atol
#define atol(x) BANNED(atol)
#undef gmtime
#define gmtime(x) BANNED(gmtime)
#undef localtime
#define localtime(x) BANNED(localtime)
#undef mktemp
#define mktemp(x) BANNED(mktemp)
