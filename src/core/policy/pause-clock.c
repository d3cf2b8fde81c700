/* SPDX-License-Identifier: MIT */
/* An execution's deadline clock, stopped while calls wait for approval (pause-clock.h). */

#include "core/policy/pause-clock.h"

#include <stdint.h>
#include <unistd.h>

void pause_clock_init(struct pause_clock *c, int wake_fd)
{
        *c = (struct pause_clock){.wake_fd = wake_fd};
        pthread_mutex_init(&c->lock, NULL);
}

void pause_clock_done(struct pause_clock *c)
{
        pthread_mutex_destroy(&c->lock);
}

void pause_clock_begin(struct pause_clock *c)
{
        if (!c)
                return;
        pthread_mutex_lock(&c->lock);
        if (c->waiting++ == 0)
                c->since = now_usec();
        pthread_mutex_unlock(&c->lock);
}

void pause_clock_end(struct pause_clock *c)
{
        uint64_t one = 1;

        if (!c)
                return;
        pthread_mutex_lock(&c->lock);
        if (c->waiting > 0 && --c->waiting == 0) {
                c->paused += now_usec() - c->since;
                if (c->wake_fd >= 0)
                        (void) !write(c->wake_fd, &one, sizeof(one));
        }
        pthread_mutex_unlock(&c->lock);
}

usec_t pause_clock_deadline(struct pause_clock *c, usec_t deadline, bool *ret_paused)
{
        bool paused = false;

        if (c) {
                pthread_mutex_lock(&c->lock);
                paused = c->waiting > 0;
                if (deadline != USEC_INFINITY)
                        deadline += c->paused;
                pthread_mutex_unlock(&c->lock);
        }
        if (ret_paused)
                *ret_paused = paused;
        return deadline;
}

void pause_clock_drain(int wake_fd)
{
        uint64_t n;

        (void) !read(wake_fd, &n, sizeof(n));
}
