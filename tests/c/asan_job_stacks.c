/*
 * Linked into the tests' C programs by scripts/asan.sh only: OpenSSL 3.0
 * runs each ASYNC job on a fixed 32 KiB stack it allocates with
 * OPENSSL_malloc, and AddressSanitizer's frames (its redzones, its
 * pthread_create and calloc interceptors) need more than that on
 * rustica's path into its first offload. Uninstrumented builds run the
 * same programs in the plain test stage with OpenSSL's own 32 KiB stacks.
 *
 * Every allocation of exactly a job stack's size gets ROOM bytes more
 * below the pointer OpenSSL receives: a stack grows down from
 * ss_sp + ss_size, so the extra bytes lie under it, inside one heap block
 * ASan knows. Everything else goes to malloc unchanged.
 */
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdlib.h>

#define JOB_STACK 32768
#define ROOM (256 * 1024)
#define SLOTS 4096

static void *bases[SLOTS], *given[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *room_malloc(size_t n, const char *file, int line)
{
    unsigned char *base;
    int i;

    (void)file;
    (void)line;
    if (n != JOB_STACK)
        return malloc(n);
    if ((base = malloc(n + ROOM)) == NULL)
        return NULL;
    pthread_mutex_lock(&lock);
    for (i = 0; i < SLOTS && given[i] != NULL; i++)
        ;
    if (i == SLOTS) {
        pthread_mutex_unlock(&lock);
        free(base);
        return malloc(n);
    }
    bases[i] = base;
    given[i] = base + ROOM;
    pthread_mutex_unlock(&lock);
    return base + ROOM;
}

/* The block `p` came from, or p itself. */
static void *block_of(void *p)
{
    void *b = p;
    int i;

    if (p == NULL)
        return NULL;
    pthread_mutex_lock(&lock);
    for (i = 0; i < SLOTS; i++)
        if (given[i] == p) {
            b = bases[i];
            given[i] = bases[i] = NULL;
            break;
        }
    pthread_mutex_unlock(&lock);
    return b;
}

static void *room_realloc(void *p, size_t n, const char *file, int line)
{
    (void)file;
    (void)line;
    /* Job stacks are never reallocated; anything else is malloc's. */
    return realloc(p, n);
}

static void room_free(void *p, const char *file, int line)
{
    (void)file;
    (void)line;
    free(block_of(p));
}

__attribute__((constructor)) static void install_room(void)
{
    CRYPTO_set_mem_functions(room_malloc, room_realloc, room_free);
}
