/* zb_files.h - one way to check an output file: every tool (zbplan, zbrun,
 * zbreport) registers the files it reads and the checkpoint folder it
 * keeps, then checks each output here before any work, so that no output
 * can overwrite an input, another output or a checkpoint, whatever its
 * spelling. Writing itself is zb_afile's (atomic: temporary file in the
 * same folder, renamed).
 *
 * An output is refused (ZB_EINPUT, a one-line message naming the option
 * and the path) when:
 *   - its name is empty, it is a folder, a block device or a socket;
 *   - it is the same file (device and inode, links followed) as a
 *     registered input: "-o m.yaml would overwrite the model m.yaml";
 *   - it lands on the same file as an earlier output ("a" and "./a", or
 *     through a link or "dir/.."): "--report a and --trace ./a name the
 *     same file";
 *   - it lands in the registered checkpoint folder or below it, or in any
 *     folder that holds a zbrun checkpoint (a .lock or latest.yaml beside
 *     step-* folders, or a step-* folder of one);
 *   - its folder is missing or not writable (a temporary file is created
 *     there and removed): "--metrics x/m.jsonl: cannot create: ...".
 * A symbolic link the user named is followed (the file it names is
 * checked and later replaced); a character device (/dev/null) and a FIFO
 * are written in place, never created. Strings are borrowed: they must
 * outlive the zb_files (argv, a loaded model).
 *
 * Inputs: zb_files_open_input opens a file to read; only regular files are
 * read (a FIFO or a device is refused, so /dev/zero cannot hang a reader). */
#ifndef ZB_FILES_H
#define ZB_FILES_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "common/zb_error.h"

#define ZB_FILES_MAX 16   /* inputs, and outputs, per tool */

typedef struct {
    const char *what;   /* "the model", "--costs", "--report" */
    const char *path;   /* as the user spelled it */
    bool exists;
    dev_t dev;
    ino_t ino;
    char land[1100];    /* outputs: real folder + "/" + name (links followed) */
} zb_file_ent;

typedef struct {
    zb_file_ent in[ZB_FILES_MAX], out[ZB_FILES_MAX];
    int n_in, n_out;
    const char *ckpt;     /* the tool's checkpoint folder, or NULL */
    char ckpt_real[1024]; /* its real path ("" when it does not exist yet) */
} zb_files;

void zb_files_init(zb_files *fs);

/* Register a file the tool reads. what names it in messages ("the
 * model"). A path that does not exist (or NULL/empty) is skipped: its
 * reader reports it. ZB_EINPUT only when more than ZB_FILES_MAX. */
zb_status zb_files_input(zb_files *fs, const char *what, const char *path, zb_err *err);

/* Register the folder the tool keeps its checkpoints in (it may not
 * exist yet). */
void zb_files_ckpt(zb_files *fs, const char *dir);

/* Check output `path` of option opt ("-o", "--report") against the rules
 * above and register it; NULL path: nothing to do. Creates and removes a
 * temporary file beside a regular output; writes nothing else. */
zb_status zb_files_output(zb_files *fs, const char *opt, const char *path, zb_err *err);

/* Open input path for reading without ever blocking (open(2) of a FIFO
 * with no writer would wait for one): NULL with errno set when it cannot
 * be opened; NULL with *kind set ("a folder", "a FIFO", "a character
 * device", "a socket", "a block device") when it is not a regular file,
 * which zb never reads (/dev/zero would never end). */
FILE *zb_files_open_input(const char *path, const char **kind);

/* Does folder dir (real or not) hold a zbrun checkpoint, or is it a step
 * folder of one? */
bool zb_files_is_ckpt_dir(const char *dir);

#endif
