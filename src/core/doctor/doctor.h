/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The report of `ptc doctor` (ptc_doctor_report()): what this machine gives a
 * configuration, probed for real. The interpreters ptc would use (each run
 * once for its version), the web providers, the supervision, every isolation
 * layer (the namespaces probe starts a confined /bin/true), the cgroup, and
 * what confines terminal commands. Nothing here prints; the text is the
 * caller's. Any thread (the probes are per call; cgroup_base() is cached).
 */

#include <stdbool.h>

#include "core/config/config.h"

struct doctor_input {
        const struct ptc_config *config;
        /* The config file: the path read, or looked at (NULL: none, or no default path). */
        const char *config_path;
        bool config_explicit; /* named by the caller (--config), not the default location */
        bool config_none;     /* no config file on purpose (PTC_ENGINE_NO_CONFIG_FILE) */
        const char *tools;    /* the enabled tools "a, b"; NULL: no "tools:" line */
};

/*
 * The report, one item per line, each ending in "\n": "ptc VERSION",
 * "kernel: ...", "config: ...", "interpreter:" and its two modes, "tools: ...",
 * "web:", "supervision: ...", the isolation layers, "isolation: configured
 * ..., effective ...", "terminal: ...". Caller frees *ret. 0 or -ENOMEM.
 */
int doctor_report(const struct doctor_input *in, char **ret);
