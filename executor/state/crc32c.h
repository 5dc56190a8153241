/* crc32c.h - CRC32C (Castagnoli, the iSCSI/ext4 checksum) and the
 * checksummed stream that checkpoint rank files are written and read
 * through, so that any damaged byte is found before it is trained on.
 *
 * Rank file = head (head_bytes, the caller's), data (what a writer puts
 * through the stream), trailer:
 *   uint32 crc[n_blocks]          CRC32C of each ZB_CRC_BLOCK bytes of data
 *   "ZBCRC32C", uint64 data_bytes, uint32 block_bytes, uint32 n_blocks,
 *   uint32 head_crc (of the head), uint32 trailer_crc (of the crc array and
 *   the footer fields before it)
 * All in host byte order, like the rest of a checkpoint.
 */
#ifndef ZB_CRC32C_H
#define ZB_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/zb_error.h"

#define ZB_CRC_BLOCK (64 * 1024)

/* Continue a CRC32C: crc of nothing is 0; crc(a+b) = zb_crc32c(crc(a), b). */
uint32_t zb_crc32c(uint32_t crc, const void *data, size_t n);

typedef struct zb_crc_writer zb_crc_writer;

/* A stream whose writes go to out and are checksummed per block. */
zb_status zb_crc_writer_open(FILE *out, const char *path, zb_crc_writer **w,
                             FILE **stream, zb_err *err);
/* errno of the first failed write through the stream, 0 if none. */
int zb_crc_writer_errno(const zb_crc_writer *w);

/* Close the stream and append the trailer to out (head_crc: CRC32C of the
 * head written before the data). Frees w; with ok false only frees. */
zb_status zb_crc_writer_finish(zb_crc_writer *w, bool ok, uint32_t head_crc,
                               zb_err *err);

/* Check the whole file f (path for messages) whose head is head[head_bytes]
 * (already read): trailer, head and every data block. Any mismatch is
 * ZB_EINPUT "path: ... at byte OFFSET". On success *stream reads exactly the
 * data (EOF after it; fclose it, f stays open), *data_bytes its size. */
zb_status zb_crc_reader_open(FILE *f, const char *path, const void *head,
                             size_t head_bytes, FILE **stream,
                             uint64_t *data_bytes, zb_err *err);

#endif
