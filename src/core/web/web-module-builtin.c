/* SPDX-License-Identifier: MIT */
/*
 * Linked only into programs that link the module's objects themselves (the
 * unit tests): web_module_get() returns those, so nothing is loaded.
 */

#include "core/web/web-module.h"

__attribute__((constructor)) static void use_builtin(void)
{
        web_module_use_builtin(&ptc_web_module_v1);
}
