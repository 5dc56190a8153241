/* stdfds.h - zbrun's standard streams before anything opens a file.
 *
 * A process started with stdin, stdout or stderr closed (`zbrun ... >&-`)
 * would hand the lowest free descriptor to the next open(): the
 * checkpoint folder's lock file would become fd 1 and every step line
 * would land in it. zb_stdfds_reserve opens /dev/null onto each of fds
 * 0, 1 and 2 that is not open, so later files never take their place.
 */
#ifndef ZB_STDFDS_H
#define ZB_STDFDS_H

/* 0 on success; -1 when /dev/null cannot be opened onto a missing one. */
int zb_stdfds_reserve(void);

#endif
