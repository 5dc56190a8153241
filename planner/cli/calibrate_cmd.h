/* calibrate_cmd.h - `zbplan calibrate`: measure this machine
 * (cost/calibrate.h), print what was measured beside the cost model's fit, and write the device
 * constants (or a copy of a model file with them). This is a command, not a
 * library: it prints. docs/zbplan.md documents it. */
#ifndef ZB_CALIBRATE_CMD_H
#define ZB_CALIBRATE_CMD_H

/* argv[0] is "calibrate". Returns the exit status: 0 ok, 2 bad arguments or
 * model file (one line on stderr), 1 other failures. */
int zb_calibrate_cmd(int argc, char **argv);

#endif
