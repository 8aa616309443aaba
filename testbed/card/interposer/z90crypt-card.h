/*
 * What the z90crypt-card interposer's files share (z90crypt-card.c has
 * the overview): the kernel's numbers, the card's frame kinds, and the
 * functions one file gives another. Those are hidden: the library exports
 * only the C library's functions it interposes.
 */
#ifndef Z90CRYPT_CARD_H
#define Z90CRYPT_CARD_H

#define _GNU_SOURCE
#include <asm/zcrypt.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define DEVICE "/dev/z90crypt"
#define CARD_FILE_NAME "z90crypt-card"
#define KIND_MOD_EXPO 1
#define KIND_CRT 2
#define KIND_CONTROL 3
/*
 * The kernel's numbers (drivers/s390/crypto):
 * - MAX_MOD_BYTES: CEX4A_MAX_MOD_SIZE_4K in zcrypt_cex4.c, the largest
 *   operand of a CEX4..8 accelerator; zcrypt_api.c skips every card whose
 *   max_mod_size is smaller and answers ENODEV when none is left.
 * - AGAIN_MAX: TRACK_AGAIN_MAX in zcrypt_api.h; the ioctl tries a request
 *   that many times while it gets EAGAIN, then answers EIO.
 * - TIMEOUT_MS: CEX4_CLEANUP_TIME (900 * HZ) in zcrypt_cex4.c, the AP
 *   queue's request timeout.
 */
#define MAX_MOD_BYTES 512
#define AGAIN_MAX 10
#define TIMEOUT_MS (900L * 1000)
/* Card descriptors' files remembered by inode; older ones by name. */
#define CARD_FILES 64

#define INTERNAL __attribute__((visibility("hidden")))

/* z90crypt-exchange.c: the card's socket from Z90CRYPT_CARD_SOCKET; NULL
 * when not usable. */
INTERNAL const char *card_socket(void);

/* z90crypt-exchange.c: one request to the card and its answer. */
INTERNAL int exchange(unsigned char kind, uint32_t length, const unsigned char *payload,
                      size_t payload_len, unsigned char *answer, size_t answer_len);

/* z90crypt-requests.c: ICARSAMODEXPO (crt 0) and ICARSACRT (crt 1). */
INTERNAL int rsa_request(int crt, void *arg);

/* z90crypt-requests.c: the status and queue depth masks. */
INTERNAL int status_mask(unsigned char *mask, size_t n, int depth_not_type);

#endif
