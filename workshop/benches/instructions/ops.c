/* The driver of the workshop's RSA benches: N operations of one kind, in
 * one of two call patterns.
 *
 *   reused: one EVP_PKEY_CTX for every operation, as `openssl speed` does.
 *   fresh:  a new context per operation, as a DNSSEC signer does for every
 *           RRSIG (BIND's dst layer, PowerDNS): a new EVP_MD_CTX,
 *           EVP_DigestSignInit_ex (EVP_DigestVerifyInit_ex) with SHA-256,
 *           one EVP_DigestSign (EVP_DigestVerify) over a 160-byte message
 *           (about an RRSIG's signed data for a small RRset), then free.
 *
 * workshop/scripts/bench-instructions.sh and bench-cache.sh run it under
 * callgrind at two values of N (workshop/scripts/lib/callgrind.sh). The
 * input (digest, signature, ciphertext) is made once, then WARMUP
 * operations run; callgrind collects only the N operations after them (run
 * it with --collect-atstart=no), so neither start-up nor the random cost of
 * making the input or of the first operation's blinding pair enters the
 * count. Every result is checked. Prints one line:
 *   <provider of the (last) operation's context> <operations counted>
 * usage: ops OPERATION WARMUP N KEY.pem [MILLISECONDS]
 *   OPERATION, reused: sign-pkcs1 verify-pkcs1 sign-pss verify-pss
 *   (SHA-256; PSS with MGF1-SHA-256 and a 32-byte salt), encrypt-oaep
 *   decrypt-oaep (SHA-256, MGF1-SHA-256, no label), decrypt-pkcs1 (PKCS#1
 *   v1.5), sign-speed verify-speed (what `openssl speed rsaN` times: PKCS#1
 *   v1.5 over 36 bytes with no digest set, so no DigestInfo);
 *   fresh: dsign-fresh dverify-fresh (PKCS#1 v1.5, DNSSEC's RSASHA256).
 * With MILLISECONDS (workshop/scripts/bench-fresh-ctx.sh: wall time, not
 * under valgrind) it runs for that long after the warm-up instead of N
 * times and prints a third field, operations per second.
 * Uses the OPENSSL_CONF of the process.
 * Built with -DQEMU_COUNT_MARKS (workshop/scripts/s390x-count.sh,
 * cross-built for s390x) it needs no valgrind: where callgrind's
 * collection is toggled it marks the point for
 * workshop/benches/instructions/qemu-count.c instead, a
 * write(-1, NULL, 0x51434e54) the kernel refuses with EBADF. */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/rsa.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef QEMU_COUNT_MARKS
#include <sys/syscall.h>
#include <unistd.h>
#define CALLGRIND_TOGGLE_COLLECT ((void)syscall(SYS_write, -1, NULL, (size_t)0x51434e54))
#else
#include <valgrind/callgrind.h>
#endif

enum kind { SIGN, VERIFY, ENCRYPT, DECRYPT };

struct operation {
    const char *name;
    enum kind kind;
    int padding;
    size_t input_len; /* of the signed digest; 0: a SHA-256 digest, set */
    int fresh;        /* a new signing context per operation */
};

static const struct operation operations[] = {
    { "sign-pkcs1", SIGN, RSA_PKCS1_PADDING, 0, 0 },
    { "verify-pkcs1", VERIFY, RSA_PKCS1_PADDING, 0, 0 },
    { "sign-pss", SIGN, RSA_PKCS1_PSS_PADDING, 0, 0 },
    { "verify-pss", VERIFY, RSA_PKCS1_PSS_PADDING, 0, 0 },
    { "encrypt-oaep", ENCRYPT, RSA_PKCS1_OAEP_PADDING, 0, 0 },
    { "decrypt-oaep", DECRYPT, RSA_PKCS1_OAEP_PADDING, 0, 0 },
    { "decrypt-pkcs1", DECRYPT, RSA_PKCS1_PADDING, 0, 0 },
    { "sign-speed", SIGN, RSA_PKCS1_PADDING, 36, 0 },
    { "verify-speed", VERIFY, RSA_PKCS1_PADDING, 36, 0 },
    { "dsign-fresh", SIGN, RSA_PKCS1_PADDING, 0, 1 },
    { "dverify-fresh", VERIFY, RSA_PKCS1_PADDING, 0, 1 },
};

/* What the operations of one run share. */
struct run {
    const struct operation *op;
    EVP_PKEY *key;
    EVP_PKEY_CTX *ctx;         /* reused: the context of every operation */
    EVP_PKEY_CTX *prep;        /* the context that made the input */
    const char *provider;      /* the provider that ran the last operation */
    unsigned char digest[36];  /* reused: what a signature signs */
    size_t digest_len;
    unsigned char message[32]; /* what an encryption encrypts */
    unsigned char record[160]; /* fresh: what a signature signs */
    unsigned char input[2048]; /* a verification's signature, a decryption's ciphertext */
    size_t input_len;
    unsigned char output[2048];
};

static double seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sets the padding and its parameters on a context already initialised for
 * the operation's kind (or its counterpart: sign for verify, encrypt for
 * decrypt, when the input is made). */
static int configure(EVP_PKEY_CTX *ctx, const struct operation *op, int signature)
{
    if (EVP_PKEY_CTX_set_rsa_padding(ctx, op->padding) != 1)
        return 0;
    if (signature && op->input_len == 0) {
        if (EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) != 1)
            return 0;
        if (op->padding == RSA_PKCS1_PSS_PADDING
            && (EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, EVP_sha256()) != 1
                || EVP_PKEY_CTX_set_rsa_pss_saltlen(ctx, RSA_PSS_SALTLEN_DIGEST) != 1))
            return 0;
    } else if (op->padding == RSA_PKCS1_OAEP_PADDING) {
        if (EVP_PKEY_CTX_set_rsa_oaep_md(ctx, EVP_sha256()) != 1
            || EVP_PKEY_CTX_set_rsa_mgf1_md(ctx, EVP_sha256()) != 1)
            return 0;
    }
    return 1;
}

static int init(EVP_PKEY_CTX *ctx, enum kind kind)
{
    switch (kind) {
    case SIGN: return EVP_PKEY_sign_init(ctx) == 1;
    case VERIFY: return EVP_PKEY_verify_init(ctx) == 1;
    case ENCRYPT: return EVP_PKEY_encrypt_init(ctx) == 1;
    case DECRYPT: return EVP_PKEY_decrypt_init(ctx) == 1;
    }
    return 0;
}

/* One signature (into SIG, *SIG_LEN its room, then its length) or one
 * verification of SIG over the record, on a context made for it. */
static int fresh(struct run *r, int sign, unsigned char *sig, size_t *sig_len)
{
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_PKEY_CTX *pctx = NULL;
    int ok = 0;

    if (md == NULL)
        return 0;
    if (sign) {
        ok = EVP_DigestSignInit_ex(md, &pctx, "SHA256", NULL, NULL, r->key, NULL) == 1
             && EVP_DigestSign(md, sig, sig_len, r->record, sizeof(r->record)) == 1;
    } else {
        ok = EVP_DigestVerifyInit_ex(md, &pctx, "SHA256", NULL, NULL, r->key, NULL) == 1
             && EVP_DigestVerify(md, sig, *sig_len, r->record, sizeof(r->record)) == 1;
    }
    /* The name stays valid while the provider is loaded. */
    if (ok && pctx != NULL)
        r->provider = OSSL_PROVIDER_get0_name(EVP_PKEY_CTX_get0_provider(pctx));
    EVP_MD_CTX_free(md);
    return ok;
}

/* Makes the input of a verification or decryption, by the counterpart
 * operation in the same process (so also through the same provider), and
 * the reused context. */
static int prepare(struct run *r)
{
    const struct operation *op = r->op;
    int ok = 1;

    memset(r->digest, 0x5a, sizeof(r->digest));
    r->digest_len = op->input_len != 0 ? op->input_len : 32;
    memset(r->message, 0xa5, sizeof(r->message));
    memset(r->record, 0x5a, sizeof(r->record));
    r->input_len = sizeof(r->input);
    if (op->fresh)
        return op->kind == SIGN || fresh(r, 1, r->input, &r->input_len);
    if (op->kind == VERIFY || op->kind == DECRYPT) {
        int signature = op->kind == VERIFY;
        EVP_PKEY_CTX *prep = r->prep = EVP_PKEY_CTX_new_from_pkey(NULL, r->key, NULL);
        ok = prep != NULL && init(prep, signature ? SIGN : ENCRYPT)
             && configure(prep, op, signature)
             && (signature ? EVP_PKEY_sign(prep, r->input, &r->input_len, r->digest,
                                           r->digest_len) == 1
                           : EVP_PKEY_encrypt(prep, r->input, &r->input_len, r->message,
                                              sizeof(r->message)) == 1);
    }
    r->ctx = ok ? EVP_PKEY_CTX_new_from_pkey(NULL, r->key, NULL) : NULL;
    if (r->ctx == NULL || !init(r->ctx, op->kind) || !configure(r->ctx, op, op->kind <= VERIFY))
        return 0;
    r->provider = OSSL_PROVIDER_get0_name(EVP_PKEY_CTX_get0_provider(r->ctx));
    return 1;
}

/* One operation, its result checked. */
static int step(struct run *r)
{
    size_t len = sizeof(r->output);

    if (r->op->fresh)
        return r->op->kind == SIGN ? fresh(r, 1, r->output, &len)
                                   : fresh(r, 0, r->input, &r->input_len);
    switch (r->op->kind) {
    case SIGN: return EVP_PKEY_sign(r->ctx, r->output, &len, r->digest, r->digest_len) == 1;
    case VERIFY:
        return EVP_PKEY_verify(r->ctx, r->input, r->input_len, r->digest, r->digest_len) == 1;
    case ENCRYPT:
        return EVP_PKEY_encrypt(r->ctx, r->output, &len, r->message, sizeof(r->message)) == 1;
    case DECRYPT:
        return EVP_PKEY_decrypt(r->ctx, r->output, &len, r->input, r->input_len) == 1
               && len == sizeof(r->message) && memcmp(r->output, r->message, len) == 0;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct run r = { .provider = "none" };
    FILE *file;
    long warmup, n, i = 0;
    int status = 1;
    double ms = 0, start = 0, end = 1e300;

    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: ops OPERATION WARMUP N KEY.pem [MILLISECONDS]\n");
        return 2;
    }
    for (size_t k = 0; k < sizeof(operations) / sizeof(operations[0]); k++)
        if (strcmp(argv[1], operations[k].name) == 0)
            r.op = &operations[k];
    warmup = strtol(argv[2], NULL, 10);
    n = strtol(argv[3], NULL, 10);
    if (r.op == NULL || warmup < 0 || n < 0) {
        fprintf(stderr, "ops: unknown operation %s or bad counts %s %s\n", argv[1], argv[2],
                argv[3]);
        return 2;
    }
    if (argc == 6 && (ms = strtod(argv[5], NULL)) <= 0) {
        fprintf(stderr, "ops: bad duration %s\n", argv[5]);
        return 2;
    }
    if ((file = fopen(argv[4], "r")) == NULL) {
        perror(argv[4]);
        return 2;
    }
    r.key = PEM_read_PrivateKey(file, NULL, NULL, NULL);
    fclose(file);
    if (r.key == NULL || !prepare(&r))
        goto done;
    if (ms > 0) {
        /* Timed: the warm-up, then operations until the time is up (the
         * clock is read once per operation, on both sides alike). */
        for (i = 0; i < warmup || seconds() < end; i++) {
            if (i == warmup) {
                start = seconds();
                end = start + ms / 1e3;
            }
            if (!step(&r))
                goto done;
        }
        printf("%s %ld %.2f\n", r.provider, i - warmup, (double)(i - warmup) / (seconds() - start));
        status = 0;
        goto done;
    }
    for (i = 0; i < warmup + n; i++) {
        if (i == warmup)
            CALLGRIND_TOGGLE_COLLECT;
        if (!step(&r))
            goto done;
    }
    if (n > 0)
        CALLGRIND_TOGGLE_COLLECT;
    printf("%s %ld\n", r.provider, n);
    status = 0;
done:
    if (status != 0)
        fprintf(stderr, "ops: %s failed after %ld operations\n", argv[1], i);
    EVP_PKEY_CTX_free(r.prep);
    EVP_PKEY_CTX_free(r.ctx);
    EVP_PKEY_free(r.key);
    return status;
}
