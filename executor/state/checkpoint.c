/* checkpoint.c - see checkpoint.h.
 *
 * Rank file: 8 bytes "ZBCKPT02", then int32 version, rank, world, step
 * (host byte order: checkpoints are for resuming on the same machine), then
 * zb_stage_save's bytes, then the CRC32C trailer of crc32c.h (per 64 KiB
 * block and for the header); a file that fails any check is refused
 * (ZB_EINPUT naming the file and the byte offset) before a byte of it is
 * trained on.
 */
#include "executor/state/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/zb_afile.h"
#include "common/zb_yaml.h"
#include "executor/state/crc32c.h"

static const char ckpt_magic[8] = {'Z', 'B', 'C', 'K', 'P', 'T', '0', '2'};

static const char *index_keys[] = {"checkpoint", "step", "data_position",
                                   "total_steps", "seed", "rng", "layout",
                                   "model", "fingerprint", "baseline_loss",
                                   "last_good_step", "folder", "data", NULL};
static const char *layout_keys[] = {"dp", "tp", "pp", "v", "schedule", NULL};

static zb_status path_of(char *out, size_t cap, zb_err *err, const char *dir,
                         const char *fmt, int a, int b) {
    char tail[64];
    snprintf(tail, sizeof tail, fmt, a, b);
    int n = snprintf(out, cap, "%s/%s", dir, tail);
    if (n < 0 || (size_t)n >= cap)
        return zb_fail(err, ZB_EIO, "checkpoint path too long: %.64s...", dir);
    return ZB_OK;
}

static zb_status step_dir(char *out, size_t cap, const char *dir, int step,
                          zb_err *err) {
    return path_of(out, cap, err, dir, "step-%08d", step, 0);
}

static zb_status rank_path(char *out, size_t cap, const char *dir, int step,
                           int rank, zb_err *err) {
    return path_of(out, cap, err, dir, "step-%08d/rank-%05d.bin", step, rank);
}

/* ---- folders ---- */

/* follow: the folder the user named may be a link to one; a step folder,
 * which only zbrun makes, may not (a link there would send the rank
 * files elsewhere). */
static zb_status make_dir(const char *path, bool follow, zb_err *err) {
    if (mkdir(path, 0777) == 0 || errno == EEXIST) {
        struct stat sb;
        if ((follow ? stat(path, &sb) : lstat(path, &sb)) == 0 && S_ISDIR(sb.st_mode))
            return ZB_OK;
        return zb_fail(err, ZB_EIO, "checkpoint folder '%s' is not a folder",
                       path);
    }
    return zb_fail(err, ZB_EIO, "cannot create checkpoint folder '%s': %s",
                   path, strerror(errno));
}

/* fsync a folder so the entries created in it survive a crash. */
static void sync_dir(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return;
    (void)fsync(fd);   /* best effort: the index's own sync is what counts */
    close(fd);
}

zb_status zb_ckpt_begin(const char *dir, int step, zb_err *err) {
    char sd[1100];
    ZB_TRY(make_dir(dir, true, err));
    ZB_TRY(step_dir(sd, sizeof sd, dir, step, err));
    ZB_TRY(make_dir(sd, false, err));
    sync_dir(dir);
    return ZB_OK;
}

/* Remove the rank files (and their leftover temporaries) of one step, then
 * the folder. Best effort: a leftover folder is harmless. */
static void remove_step(const char *dir, int step) {
    char sd[1100], f[1400];
    if (step_dir(sd, sizeof sd, dir, step, NULL) != ZB_OK) return;
    struct stat sb;
    if (lstat(sd, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
        unlink(sd);   /* a link (not made by zbrun): never what it names */
        return;
    }
    DIR *d = opendir(sd);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, "rank-", 5) == 0) {
            snprintf(f, sizeof f, "%s/%s", sd, e->d_name);
            unlink(f);
        }
    closedir(d);
    rmdir(sd);
}

/* Once the index names `step`: remove every other step folder (the
 * previous checkpoint, and folders a killed run left half written) and
 * temporary index files of killed runs. */
static void remove_others(const char *dir, int step) {
    DIR *d = opendir(dir);
    if (!d) return;
    int other[64], n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        if (strncmp(e->d_name, "latest.yaml.tmp.", 16) == 0) {
            char f[1400];
            snprintf(f, sizeof f, "%s/%s", dir, e->d_name);
            unlink(f);
        } else if (strncmp(e->d_name, "step-", 5) == 0 && strlen(e->d_name) == 13) {
            long k = strtol(e->d_name + 5, &end, 10);
            if (*end == '\0' && k != step && n < 64) other[n++] = (int)k;
        }
    }
    closedir(d);
    for (int i = 0; i < n; i++) remove_step(dir, other[i]);
}

/* ---- rank files ---- */

typedef struct {
    char magic[8];
    int32_t version, rank, world, step;
} rank_head;

static zb_status write_rank(FILE *f, const char *path, int rank, int world,
                            int step, const zb_stage *st, zb_err *err) {
    rank_head h = {.version = ZB_CKPT_VERSION, .rank = rank, .world = world,
                   .step = step};
    memcpy(h.magic, ckpt_magic, sizeof h.magic);
    if (fwrite(&h, sizeof h, 1, f) != 1)
        return zb_fail(err, ZB_EIO, "cannot write '%s': %s", path,
                       strerror(errno));
    zb_crc_writer *w;
    FILE *data;
    ZB_TRY(zb_crc_writer_open(f, path, &w, &data, err));
    zb_status s = zb_stage_save(st, data, err);
    if (s == ZB_OK && fflush(data) != 0) s = ZB_EIO;
    if (s != ZB_OK && zb_crc_writer_errno(w))   /* say where and why */
        s = zb_fail(err, ZB_EIO, "cannot write checkpoint '%s': %s", path,
                    strerror(zb_crc_writer_errno(w)));
    zb_status t = zb_crc_writer_finish(w, s == ZB_OK, zb_crc32c(0, &h, sizeof h), err);
    return s != ZB_OK ? s : t;
}

zb_status zb_ckpt_save_rank(const char *dir, int step, int rank, int world,
                            const zb_stage *st, zb_err *err) {
    char path[1400];
    zb_afile af;
    ZB_TRY(rank_path(path, sizeof path, dir, step, rank, err));
    ZB_TRY(zb_afile_open_mode(&af, path, false, err));   /* a link is replaced */
    zb_status s = write_rank(af.f, path, rank, world, step, st, err);
    zb_status c = zb_afile_close(&af, s == ZB_OK, err);
    return s != ZB_OK ? s : c;
}

static zb_status read_rank(FILE *f, const char *path, int rank, int world,
                           int step, zb_stage *st, zb_err *err) {
    rank_head h;
    if (fread(&h, sizeof h, 1, f) != 1 ||
        memcmp(h.magic, ckpt_magic, sizeof h.magic) != 0)
        return zb_fail(err, ZB_EINPUT, "%s: not a zb checkpoint file", path);
    FILE *data;
    uint64_t n;
    ZB_TRY(zb_crc_reader_open(f, path, &h, sizeof h, &data, &n, err));
    zb_status s = ZB_OK;
    if (h.version > ZB_CKPT_VERSION)
        s = zb_fail(err, ZB_EINPUT, "%s: rank file format %d was written by a "
                    "newer zb (this zbrun reads format %d)", path, h.version,
                    ZB_CKPT_VERSION);
    else if (h.version != ZB_CKPT_VERSION || h.rank != rank || h.world != world ||
        h.step != step)
        s = zb_fail(err, ZB_EINPUT, "%s: holds version %d rank %d of %d "
                    "step %d, expected version %d rank %d of %d step %d",
                    path, h.version, h.rank, h.world, h.step,
                    ZB_CKPT_VERSION, rank, world, step);
    if (s == ZB_OK && (s = zb_stage_load(st, data, err)) != ZB_OK &&
        strncmp(err->msg, path, strlen(path)) != 0) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        zb_fail(err, s, "%s: %s", path, msg);
    }
    if (s == ZB_OK && fgetc(data) != EOF)
        s = zb_fail(err, ZB_EINPUT, "%s: unexpected bytes after the "
                    "checkpoint data", path);
    fclose(data);
    return s;
}

zb_status zb_ckpt_load_rank(const char *dir, int step, int rank, int world,
                            zb_stage *st, zb_err *err) {
    char path[1400];
    ZB_TRY(rank_path(path, sizeof path, dir, step, rank, err));
    FILE *f = fopen(path, "rb");
    if (!f)   /* the index names this step: its files belong to it */
        return zb_fail(err, ZB_EINPUT, "damaged checkpoint: cannot open '%s': %s",
                       path, strerror(errno));
    zb_status s = read_rank(f, path, rank, world, step, st, err);
    fclose(f);
    return s;
}

/* ---- index ---- */

static zb_status index_path(char *out, size_t cap, const char *dir,
                            zb_err *err) {
    return path_of(out, cap, err, dir, "latest.yaml", 0, 0);
}

zb_status zb_ckpt_commit(const char *dir, const zb_plan *plan,
                         const zb_ckpt_state *cs, zb_err *err) {
    char path[1100], folder[32], fp[24];
    ZB_TRY(index_path(path, sizeof path, dir, err));
    snprintf(folder, sizeof folder, "step-%08d", cs->step);
    snprintf(fp, sizeof fp, "%016llx", (unsigned long long)zb_plan_fingerprint(plan));
    zb_yw *w;
    ZB_TRY(zb_yw_open_mode(path, false, &w, err));   /* a link is replaced */
    zb_yw_map_begin(w, false);
    zb_yw_kint(w, "checkpoint", ZB_CKPT_INDEX_VERSION);
    zb_yw_kint(w, "step", cs->step);
    zb_yw_kint(w, "data_position", cs->step);
    zb_yw_kint(w, "total_steps", cs->total_steps);
    zb_yw_kint(w, "seed", (long long)plan->model.train.seed);
    zb_yw_kstr(w, "rng", "none");
    zb_yw_str(w, "layout");
    zb_yw_map_begin(w, true);
    zb_yw_kint(w, "dp", plan->dp);
    zb_yw_kint(w, "tp", plan->tp);
    zb_yw_kint(w, "pp", plan->pp);
    zb_yw_kint(w, "v", plan->v);
    zb_yw_kstr(w, "schedule", plan->sched.name);
    zb_yw_map_end(w);
    zb_ckpt_write_model(w, plan);
    zb_ckpt_write_data(w, plan);
    zb_yw_kstr(w, "fingerprint", fp);
    zb_yw_kdouble(w, "baseline_loss", cs->baseline_loss);
    zb_yw_kint(w, "last_good_step", cs->last_good_step);
    zb_yw_kstr(w, "folder", folder);
    zb_yw_map_end(w);
    ZB_TRY(zb_yw_close(w, true, err));
    remove_others(dir, cs->step);
    return ZB_OK;
}

/* The layout of the checkpoint must be the plan's: the rank files hold
 * shards of that layout. */
static zb_status check_layout(const zb_ydoc *doc, const zb_ynode *lay,
                              const zb_plan *plan, zb_err *err) {
    long long dp, tp, pp, v;
    char sched[32];
    ZB_TRY(zb_ynode_expect(doc, lay, ZB_Y_MAP, "'layout'", err));
    ZB_TRY(zb_ymap_check_keys(doc, lay, "layout", layout_keys, err));
    ZB_TRY(zb_yget_int(doc, lay, "dp", true, 1, 1 << 20, &dp, err));
    ZB_TRY(zb_yget_int(doc, lay, "tp", true, 1, 1 << 20, &tp, err));
    ZB_TRY(zb_yget_int(doc, lay, "pp", true, 1, 1 << 20, &pp, err));
    ZB_TRY(zb_yget_int(doc, lay, "v", true, 1, 1 << 20, &v, err));
    ZB_TRY(zb_yget_str(doc, lay, "schedule", true, sched, sizeof sched, err));
    if (dp != plan->dp || tp != plan->tp || pp != plan->pp || v != plan->v ||
        strcmp(sched, plan->sched.name) != 0)
        return zb_fail_at(err, doc->file, lay->line, lay->col,
                          "checkpoint layout dp=%lld tp=%lld pp=%lld v=%lld "
                          "%s does not match the plan's dp=%d tp=%d pp=%d "
                          "v=%d %s", dp, tp, pp, v, sched, plan->dp, plan->tp,
                          plan->pp, plan->v, plan->sched.name);
    return ZB_OK;
}

/* Format 2's fields: the model (checked against the plan) and the
 * divergence baseline; format 1 has none of them. */
static zb_status parse_v2(const zb_ydoc *doc, const zb_ynode *root, long long ver,
                          const zb_plan *plan, zb_ckpt_index *idx, zb_err *err) {
    long long good = 0;
    char fp[24];
    if (ver < 2) return ZB_OK;
    const zb_ynode *model = zb_ymap_get(root, "model");
    if (!model) return zb_fail_at(err, doc->file, root->line, root->col,
                                  "missing key 'model' in checkpoint index");
    ZB_TRY(zb_ckpt_check_model(doc, model, plan, err));
    ZB_TRY(zb_yget_str(doc, root, "fingerprint", true, fp, sizeof fp, err));
    ZB_TRY(zb_yget_double(doc, root, "baseline_loss", true, 0, 1e300,
                          &idx->baseline_loss, err));
    ZB_TRY(zb_yget_int(doc, root, "last_good_step", true, 0, 1 << 30, &good, err));
    idx->last_good_step = (int)good;
    return ZB_OK;
}

static zb_status parse_index(const zb_ydoc *doc, const zb_plan *plan,
                             zb_ckpt_index *idx, zb_err *err) {
    const zb_ynode *root = doc->root;
    long long ver, step, pos, total;
    char folder[32], want[32];
    if (!root) return zb_fail_at(err, doc->file, 1, 0, "empty checkpoint index");
    ZB_TRY(zb_ynode_expect(doc, root, ZB_Y_MAP, "checkpoint index", err));
    ZB_TRY(zb_ymap_check_keys(doc, root, "checkpoint index", index_keys, err));
    ZB_TRY(zb_yget_int(doc, root, "checkpoint", true, 1, LLONG_MAX, &ver, err));
    if (ver > ZB_CKPT_INDEX_VERSION)
        return zb_fail_at(err, doc->file, root->line, root->col, "checkpoint "
                          "format %lld was written by a newer zb (this zbrun "
                          "reads formats 1 to %d): resume with that zb",
                          ver, ZB_CKPT_INDEX_VERSION);
    ZB_TRY(zb_yget_int(doc, root, "step", true, 1, 1 << 30, &step, err));
    ZB_TRY(zb_yget_int(doc, root, "data_position", true, step, step, &pos, err));
    ZB_TRY(zb_yget_int(doc, root, "total_steps", true, 1, 1 << 30, &total, err));
    ZB_TRY(zb_yget_str(doc, root, "folder", true, folder, sizeof folder, err));
    const zb_ynode *lay = zb_ymap_get(root, "layout");
    if (!lay) return zb_fail_at(err, doc->file, root->line, root->col,
                                "missing key 'layout' in checkpoint index");
    ZB_TRY(check_layout(doc, lay, plan, err));
    ZB_TRY(parse_v2(doc, root, ver, plan, idx, err));
    snprintf(want, sizeof want, "step-%08lld", step);
    if (strcmp(folder, want) != 0) {
        const zb_ynode *n = zb_ymap_get(root, "folder");
        return zb_fail_at(err, doc->file, n->line, n->col, "'folder' must be "
                          "'%s' for step %lld, got '%s'", want, step, folder);
    }
    idx->step = (int)step;
    idx->data_position = (int)pos;
    idx->total_steps = (int)total;
    ZB_TRY(zb_yget_int(doc, root, "seed", true, 0, LLONG_MAX, &idx->seed, err));
    return zb_ckpt_read_data(doc, root, idx, err);
}

zb_status zb_ckpt_find(const char *dir, const zb_plan *plan,
                       zb_ckpt_index *idx, bool *found, zb_err *err) {
    char path[1100];
    *found = false;
    memset(idx, 0, sizeof *idx);
    struct stat sb;
    ZB_TRY(index_path(path, sizeof path, dir, err));
    if (lstat(path, &sb) != 0) return ZB_OK;   /* no checkpoint yet */
    if (stat(path, &sb) != 0)   /* a dangling link is no fresh start */
        return zb_fail(err, ZB_EINPUT, "%s: cannot read the checkpoint index: "
                       "%s (a link to nowhere?)", path, strerror(errno));
    zb_ydoc doc;
    zb_status s = zb_ydoc_load(path, &doc, err);
    if (s == ZB_OK) s = parse_index(&doc, plan, idx, err);
    zb_ydoc_free(&doc);
    if (s != ZB_OK) return s;
    char sd[1100];
    ZB_TRY(step_dir(sd, sizeof sd, dir, idx->step, err));
    if (stat(sd, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return zb_fail(err, ZB_EINPUT, "damaged checkpoint: %s names step %d "
                       "but its folder %s is missing", path, idx->step, sd);
    *found = true;
    return ZB_OK;
}
