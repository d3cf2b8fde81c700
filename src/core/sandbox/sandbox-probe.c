/* SPDX-License-Identifier: MIT */
/*
 * What works on this machine: each layer alone, then the whole sandbox end to end (a real
 * sandbox_spawn() of /bin/true), because a layer can probe fine and still fail in
 * combination (Ubuntu's AppArmor leaves user namespaces powerless, for one).
 */
#include "core/sandbox/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/fd-util.h"
#include "basic/path-util.h"
#include "core/sandbox/landlock.h"
#include "core/sandbox/seccomp-policy.h"

static void probe_end_to_end(struct sandbox_probe *p)
{
        char dir[] = "/tmp/ptc-probe-XXXXXX";
        char *argv[] = {(char *) "true", NULL};
        char *envp[] = {NULL};
        const char *truebin = access("/usr/bin/true", X_OK) == 0 ? "/usr/bin/true" : "/bin/true";
        _cleanup_close_ int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
        struct sandbox_opts o = {
                .layers = SANDBOX_LAYERS_ALL,
                .path = truebin,
                .argv = argv,
                .envp = envp,
                .cwd = dir,
                .stdout_fd = devnull,
                .stderr_fd = devnull,
                .landlock_abi = p->landlock_abi,
                .limits = {.data_bytes = 256u << 20,
                           .pids = 64,
                           .nofile = 64,
                           .fsize_bytes = 1u << 20,
                           .cpu_seconds = 10,
                           .tmp_bytes = 1u << 20},
        };
        struct sandbox_proc sp;
        struct diag d = {};
        int status;

        if (!p->works[SANDBOX_LAYER_LANDLOCK])
                o.layers &= ~(1u << SANDBOX_LAYER_LANDLOCK);
        if (!p->works[SANDBOX_LAYER_SECCOMP])
                o.layers &= ~(1u << SANDBOX_LAYER_SECCOMP);
        if (devnull < 0 || !mkdtemp(dir)) {
                snprintf(p->why[SANDBOX_LAYER_NAMESPACES], 256, "cannot prepare the probe: %m");
                return;
        }
        /* As isolation auto does: a layer that fails is reported and left out. */
        for (;;) {
                enum sandbox_layer failed;

                if (sandbox_spawn(&o, &sp, &failed, &d) < 0) {
                        if (failed == _SANDBOX_LAYER_MAX || !(o.layers & (1u << failed)))
                                failed = SANDBOX_LAYER_NAMESPACES;
                        p->works[failed] = false;
                        snprintf(p->why[failed], 256, "%.250s", d.message);
                        if (!(o.layers & (1u << failed)))
                                break;
                        o.layers &= ~(1u << failed);
                        continue;
                }
                (void) waitpid(sp.pid, NULL, 0);
                if (!(o.layers & (1u << SANDBOX_LAYER_NAMESPACES)))
                        status = 0;
                else if (sandbox_read_status(sp.status_fd, &status) == 0 && status == 0)
                        p->works[SANDBOX_LAYER_NAMESPACES] = true;
                else
                        snprintf(p->why[SANDBOX_LAYER_NAMESPACES], 256,
                                 "a confined /bin/true did not succeed");
                safe_close(sp.pidfd);
                safe_close(sp.status_fd);
                break;
        }
        (void) rmdir(dir);
}

unsigned sandbox_kernel_missing(int landlock_abi, char ret_why[_SANDBOX_LAYER_MAX][256])
{
        unsigned missing = 0;

        if (landlock_abi < 1) {
                missing |= 1u << SANDBOX_LAYER_LANDLOCK;
                snprintf(ret_why[SANDBOX_LAYER_LANDLOCK], 256, "%s",
                         landlock_abi == -EOPNOTSUPP ? "disabled at boot (add landlock to lsm=)"
                         : landlock_abi == -ENOSYS   ? "not in this kernel"
                                                     : strerror(-landlock_abi));
        }
        if (!seccomp_is_available()) {
                missing |= 1u << SANDBOX_LAYER_SECCOMP;
                snprintf(ret_why[SANDBOX_LAYER_SECCOMP], 256, "seccomp filters are not available");
        }
        return missing;
}

void sandbox_probe(struct sandbox_probe *ret)
{
        struct sandbox_probe p = {};
        unsigned missing;

        p.landlock_abi = landlock_abi();
        missing = sandbox_kernel_missing(p.landlock_abi, p.why);
        p.works[SANDBOX_LAYER_LANDLOCK] = !(missing & (1u << SANDBOX_LAYER_LANDLOCK));
        p.works[SANDBOX_LAYER_SECCOMP] = !(missing & (1u << SANDBOX_LAYER_SECCOMP));
        p.works[SANDBOX_LAYER_RLIMITS] = true;
        probe_end_to_end(&p);
        *ret = p;
}
