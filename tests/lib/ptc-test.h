/* SPDX-License-Identifier: MIT */
#pragma once

/* cmocka needs these before it; sorted includes would break the order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
