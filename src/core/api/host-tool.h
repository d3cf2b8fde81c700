/* SPDX-License-Identifier: MIT */
#pragma once

/* Host tools (host-tool.c): a struct ptc_tool_def as a registry tool. */

#include <jansson.h>

#include "core/registry/registry.h"
#include "ptc/ptc.h"

/* A registered host tool. The registry's tool points at it (tool.userdata). */
struct host_tool {
        char *name;
        char *description;
        char *returns;
        json_t *parameters; /* owned */
        ptc_tool_fn fn;
        void *userdata; /* the host's */
};

/* The registry entry for @h (borrowed: @h must outlive the registry). */
struct registry_extra_tool host_tool_extra(const struct host_tool *h);
void host_tool_release(struct host_tool *h);
