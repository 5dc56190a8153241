/* stdfds.c - see stdfds.h. */
#include "executor/host/stdfds.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int zb_stdfds_reserve(void) {
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) continue;
        /* the lowest free descriptor is fd itself: the lower ones are open */
        int got = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (got < 0) return -1;
        if (got != fd) {   /* cannot happen; keep fd reserved anyway */
            if (dup2(got, fd) < 0) return -1;
            close(got);
        }
    }
    return 0;
}
