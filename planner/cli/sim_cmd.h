/* sim_cmd.h - `zbplan sim`: the researcher's simulator command. Builds one
 * schedule (or all of them) for uniform per-stage costs given on the
 * command line or per-stage costs from a file (--costs, cli/sim_costs.h), or
 * reads an order in PyTorch's CSV (--import, common/zb_schedule_csv.h),
 * simulates it and prints the longest rank span, bubble rate and per-rank
 * span/busy/bubble/peak memory as a table or as JSON (docs/zbplan.md gives
 * the JSON format). This is a command, not a library: it prints.
 */
#ifndef ZB_SIM_CMD_H
#define ZB_SIM_CMD_H

/* argv[0] is "sim". Returns the process exit status: 0 ok, 2 bad
 * arguments (one line on stderr), 1 other failures. */
int zb_sim_cmd(int argc, char **argv);

/* The usage text of `zbplan sim`. */
const char *zb_sim_cmd_usage(void);

#endif
