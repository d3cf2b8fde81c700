/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * ANSI / VT escape stripping (docs/seed.md 1.11). Works on UTF-8 text
 * in place: CSI, OSC, DCS/SOS/PM/APC, nF, Fp/Fe/Fs escapes and 8-bit C1
 * controls (U+0080..U+009F, i.e. C2 80..C2 9F) are removed; everything else,
 * including tabs, newlines and non-Latin text, is kept. An ESC or C2 byte that
 * starts no sequence is kept too, unless a removed sequence follows it: the
 * result holds no sequence that stripping it again would remove.
 */

#include <stddef.h>

/* Strip @s (length @n) in place; returns the new length and NUL-terminates. */
size_t ansi_strip(char *s, size_t n);
