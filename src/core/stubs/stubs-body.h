/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Everything of the tools module between the header docstring and __all__: the module's text
 * is fixed except for the header and the stubs, so it is one string, NUL-terminated, static:
 * src/core/stubs/module-body.py, embedded at build time (meson.build: modules_generated).
 */
extern const char stubs_module_body[];
