/*
 * Marvin-style timing measurement of RSA decryption: many ciphertext
 * classes, each one a way a plaintext block can be (in)valid, timed in
 * rounds. A round decrypts one ciphertext of every class, the classes in a
 * fresh random order; the rounds are the blocks of the Friedman test that
 * workshop/benches/timing/marvin.py runs on the output.
 *
 * The ciphertexts are made here with the public key (raw RSA of a block
 * built byte by byte for its class) and each one is checked by the default
 * provider before anything is timed: a valid block must decrypt to its
 * payload, an invalid one must be refused.
 *
 * usage: marvin -k KEY.pem -b default|software|libica [-m MODULE] [-l LIBICA]
 *               -p pkcs1|pkcs1-ir|oaep|raw [-c CLASS,CLASS,...] [-n ROUNDS]
 *               [-o OUT] [-L]
 *   -k  RSA private key (PEM); the same key for every configuration.
 *   -b  which provider decrypts: OpenSSL's default provider, or rustica
 *       (module -m) with backend = software, or with backend = libica and
 *       libica = -l (an absolute path, e.g. the emulated libica_emu.so).
 *   -p  pkcs1: PKCS#1 v1.5 with implicit rejection off (a bad block is an
 *       error, as OpenSSL 3.0's default provider does it); pkcs1-ir: with
 *       implicit rejection on (rustica's default: every decryption
 *       succeeds); oaep: OAEP, SHA-1 and MGF1-SHA-1, empty label; raw: no
 *       padding (the RSA primitive alone: blocks of different sizes, for
 *       finding where a difference comes from).
 *   -c  the classes (default: all of that padding); -L lists them.
 *   -n  rounds (default 1000); each round times every class once.
 *   -o  output (default stdout): '#' header lines, a line of class names,
 *       then one line per round with the time of each class in TSC ticks
 *       (rdtsc behind lfence ... rdtscp, lfence), in the header's class
 *       order. "# tsc_per_ns" converts ticks to ns (TSC calibrated against
 *       CLOCK_MONOTONIC_RAW over the run).
 *
 * A benchmark: run it pinned to one CPU (taskset), with RUSTICA_STATS=0.
 * Exit status 1 if anything decrypted to the wrong outcome.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/pem.h>
#include <openssl/provider.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>

#define POOL 64     /* ciphertexts per class */
#define WARMUP 4    /* untimed rounds before the first timed one */
#define MAXK 1024   /* largest modulus, bytes */
#define HLEN 20     /* SHA-1, OAEP's default digest */

enum padding { PKCS1, PKCS1_IR, OAEP, RAW };

/* How a class's block is built. */
enum shape {
    NO_STRUCTURE,   /* random value below n that is not a valid block */
    V15_VALID,      /* 00 02 PS 00 M, |PS| >= 8, PS nonzero */
    V15_NO_PADDING, /* 00 .. 00 M: a bare message, 00 02 missing */
    V15_FIRST_BYTE, /* 01 02 PS 00 M: valid but for the first byte */
    V15_SIGNATURE,  /* 00 01 FF .. FF 00 M: signature padding */
    V15_HEADER_ONLY,/* 00 02 and nonzero bytes to the end: no separator */
    V15_ZERO_IN_PS, /* 00 02 PS 00 M with a 00 at PS[3]: PS too short */
    OAEP_VALID,     /* 00 maskedSeed maskedDB, DB = lHash 00.. 01 M */
    OAEP_FIRST_BYTE,/* Y = 01, else valid */
    OAEP_BAD_LHASH, /* lHash with a bit flipped */
    OAEP_NO_SEP,    /* DB = lHash 00 .. 00: no 01 separator */
    OAEP_BAD_SEP,   /* DB = lHash 00 .. 02 M: separator 02 instead of 01 */
};

struct class {
    const char *name;
    enum padding pad;   /* PKCS1 stands for both PKCS#1 v1.5 modes */
    enum shape shape;
    int len;            /* payload length; -1 = the largest possible */
    int fill;           /* payload byte, or -1 for random bytes */
    int valid;
};

static const struct class CLASSES[] = {
    {"no_structure", PKCS1, NO_STRUCTURE, 0, -1, 0},
    {"no_padding_48", PKCS1, V15_NO_PADDING, 48, -1, 0},
    {"wrong_first_byte_48", PKCS1, V15_FIRST_BYTE, 48, -1, 0},
    {"signature_padding_48", PKCS1, V15_SIGNATURE, 48, -1, 0},
    {"header_only", PKCS1, V15_HEADER_ONLY, 0, -1, 0},
    {"zero_in_padding_48", PKCS1, V15_ZERO_IN_PS, 48, -1, 0},
    {"valid_0", PKCS1, V15_VALID, 0, -1, 1},
    {"valid_1", PKCS1, V15_VALID, 1, -1, 1},
    {"valid_48", PKCS1, V15_VALID, 48, -1, 1},
    {"valid_48_x41", PKCS1, V15_VALID, 48, 0x41, 1},
    {"valid_118", PKCS1, V15_VALID, 118, -1, 1},
    {"valid_max", PKCS1, V15_VALID, -1, -1, 1},
    {"no_structure", OAEP, NO_STRUCTURE, 0, -1, 0},
    {"wrong_first_byte_48", OAEP, OAEP_FIRST_BYTE, 48, -1, 0},
    {"wrong_lhash_48", OAEP, OAEP_BAD_LHASH, 48, -1, 0},
    {"no_separator", OAEP, OAEP_NO_SEP, 0, -1, 0},
    {"wrong_separator_48", OAEP, OAEP_BAD_SEP, 48, -1, 0},
    {"valid_0", OAEP, OAEP_VALID, 0, -1, 1},
    {"valid_48", OAEP, OAEP_VALID, 48, -1, 1},
    {"valid_48_x41", OAEP, OAEP_VALID, 48, 0x41, 1},
    {"valid_max", OAEP, OAEP_VALID, -1, -1, 1},
    /* Raw RSA (no padding): the primitive alone, by the size of the block. */
    {"random", RAW, NO_STRUCTURE, 0, -1, 1},
    {"pkcs1_block_48", RAW, V15_VALID, 48, -1, 1},
    {"small_48", RAW, V15_NO_PADDING, 48, -1, 1},
    {"small_8", RAW, V15_NO_PADDING, 8, -1, 1},
};
#define NCLASSES (sizeof CLASSES / sizeof *CLASSES)

static void die(const char *what)
{
    fprintf(stderr, "marvin: %s failed\n", what);
    ERR_print_errors_fp(stderr);
    exit(1);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: marvin -k KEY.pem -b default|software|libica [-m MODULE] [-l LIBICA]\n"
            "              -p pkcs1|pkcs1-ir|oaep|raw [-c CLASS,...] [-n ROUNDS] [-o OUT] [-L]\n");
    exit(2);
}

static inline uint64_t tick_start(void)
{
    _mm_lfence();
    uint64_t t = __rdtsc();
    _mm_lfence();
    return t;
}

static inline uint64_t tick_end(unsigned *cpu)
{
    uint64_t t = __rdtscp(cpu);
    _mm_lfence();
    return t;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* xoshiro256** seeded from RAND_bytes: the class order of each round. */
static uint64_t rs[4];
static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static uint64_t next_random(void)
{
    uint64_t r = rotl(rs[1] * 5, 7) * 9, t = rs[1] << 17;
    rs[2] ^= rs[0];
    rs[3] ^= rs[1];
    rs[1] ^= rs[2];
    rs[0] ^= rs[3];
    rs[2] ^= t;
    rs[3] = rotl(rs[3], 45);
    return r;
}
/* Uniform in [0, n), n small (the modulo bias is below 2^-50). */
static size_t below(size_t n) { return (size_t)(next_random() % n); }

static void random_bytes(unsigned char *b, size_t n)
{
    if (RAND_bytes(b, (int)n) != 1)
        die("RAND_bytes");
}

static void random_nonzero(unsigned char *b, size_t n)
{
    random_bytes(b, n);
    for (size_t i = 0; i < n; i++)
        while (b[i] == 0)
            random_bytes(b + i, 1);
}

/* MGF1 with SHA-1, XORed into out. */
static void mgf1_xor(unsigned char *out, size_t len, const unsigned char *seed, size_t slen)
{
    unsigned char buf[MAXK + 4], md[HLEN];
    memcpy(buf, seed, slen);
    for (uint32_t counter = 0; (size_t)counter * HLEN < len; counter++) {
        buf[slen] = (unsigned char)(counter >> 24);
        buf[slen + 1] = (unsigned char)(counter >> 16);
        buf[slen + 2] = (unsigned char)(counter >> 8);
        buf[slen + 3] = (unsigned char)counter;
        if (EVP_Digest(buf, slen + 4, md, NULL, EVP_sha1(), NULL) != 1)
            die("SHA-1");
        for (size_t i = 0; i < HLEN && counter * HLEN + i < len; i++)
            out[counter * HLEN + i] ^= md[i];
    }
}

/* The payload length of a class for a k-byte modulus. */
static size_t payload_len(const struct class *c, size_t k)
{
    if (c->len >= 0)
        return (size_t)c->len;
    return c->pad == OAEP ? k - 2 * HLEN - 2 : k - 11;
}

/*
 * Builds one block of class c (k bytes, below n) and its expected payload
 * (msg, *mlen) for the valid classes.
 */
static void build(const struct class *c, const unsigned char *n, size_t k, unsigned char *em,
                  unsigned char *msg, size_t *mlen)
{
    size_t m = payload_len(c, k);
    *mlen = m;
    if (c->fill >= 0)
        memset(msg, c->fill, m);
    else
        random_bytes(msg, m);
    switch (c->shape) {
    case NO_STRUCTURE:
        do
            random_bytes(em, k);
        while (memcmp(em, n, k) >= 0);
        break;
    case V15_VALID:
    case V15_FIRST_BYTE:
    case V15_ZERO_IN_PS:
        em[0] = c->shape == V15_FIRST_BYTE ? 0x01 : 0x00;
        em[1] = 0x02;
        random_nonzero(em + 2, k - 3 - m);
        if (c->shape == V15_ZERO_IN_PS)
            em[2 + 3] = 0x00;
        em[k - 1 - m] = 0x00;
        memcpy(em + k - m, msg, m);
        break;
    case V15_NO_PADDING:
        memset(em, 0, k - m);
        memcpy(em + k - m, msg, m);
        break;
    case V15_SIGNATURE:
        em[0] = 0x00;
        em[1] = 0x01;
        memset(em + 2, 0xff, k - 3 - m);
        em[k - 1 - m] = 0x00;
        memcpy(em + k - m, msg, m);
        break;
    case V15_HEADER_ONLY:
        em[0] = 0x00;
        em[1] = 0x02;
        random_nonzero(em + 2, k - 2);
        break;
    default: {
        /* OAEP: EM = Y || maskedSeed || maskedDB, DB = lHash || PS || 01 || M. */
        unsigned char *seed = em + 1, *db = em + 1 + HLEN;
        size_t dblen = k - 1 - HLEN;
        em[0] = c->shape == OAEP_FIRST_BYTE ? 0x01 : 0x00;
        if (EVP_Digest("", 0, db, NULL, EVP_sha1(), NULL) != 1)
            die("SHA-1");
        if (c->shape == OAEP_BAD_LHASH)
            db[0] ^= 0x01;
        memset(db + HLEN, 0, dblen - HLEN);
        if (c->shape != OAEP_NO_SEP) {
            db[dblen - m - 1] = c->shape == OAEP_BAD_SEP ? 0x02 : 0x01;
            memcpy(db + dblen - m, msg, m);
        }
        random_bytes(seed, HLEN);
        mgf1_xor(db, dblen, seed, HLEN);
        mgf1_xor(seed, HLEN, db, dblen);
        break;
    }
    }
}

static EVP_PKEY_CTX *decrypt_ctx(OSSL_LIB_CTX *lib, EVP_PKEY *key, const char *propq,
                                 enum padding pad)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_pkey(lib, key, propq);
    if (ctx == NULL || EVP_PKEY_decrypt_init(ctx) != 1)
        die("decrypt init");
    int mode = pad == OAEP ? RSA_PKCS1_OAEP_PADDING
               : pad == RAW ? RSA_NO_PADDING : RSA_PKCS1_PADDING;
    if (EVP_PKEY_CTX_set_rsa_padding(ctx, mode) != 1)
        die("set padding");
    if (pad == PKCS1 || pad == PKCS1_IR) {
        unsigned int ir = pad == PKCS1_IR;
        OSSL_PARAM p[] = {
            OSSL_PARAM_construct_uint("implicit-rejection", &ir),
            OSSL_PARAM_END,
        };
        /* OpenSSL 3.0's default provider ignores the name (it has none). */
        if (EVP_PKEY_CTX_set_params(ctx, p) != 1)
            die("set implicit-rejection");
    }
    return ctx;
}

/* Writes the configuration for one lib context; returns its path. */
static char *write_config(const char *backend, const char *module, const char *libica)
{
    static char path[] = "/tmp/marvin-XXXXXX.cnf";
    int fd = mkstemps(path, 4);
    if (fd < 0)
        die("mkstemps");
    FILE *f = fdopen(fd, "w");
    if (f == NULL)
        die("fdopen");
    fprintf(f, "openssl_conf = openssl_init\n[openssl_init]\nproviders = provider_sect\n"
               "[provider_sect]\ndefault = default_sect\n");
    if (strcmp(backend, "default") != 0)
        fprintf(f, "rustica = rustica_sect\n");
    fprintf(f, "[default_sect]\nactivate = 1\n");
    if (strcmp(backend, "default") != 0) {
        fprintf(f, "[rustica_sect]\nmodule = %s\nactivate = 1\nbackend = %s\n", module,
                backend);
        if (libica != NULL)
            fprintf(f, "libica = %s\n", libica);
    }
    if (fclose(f) != 0)
        die("writing the configuration");
    return path;
}

static const char *provider_param(const OSSL_PROVIDER *prov, const char *name)
{
    static char buf[4][512];
    static int next;
    char *out = buf[next++ & 3];
    const char *value = NULL;
    OSSL_PARAM p[] = {
        OSSL_PARAM_construct_utf8_ptr(name, (char **)&value, 0),
        OSSL_PARAM_END,
    };
    snprintf(out, sizeof buf[0], "?");
    if (OSSL_PROVIDER_get_params(prov, p) == 1 && OSSL_PARAM_modified(p) && value != NULL)
        snprintf(out, sizeof buf[0], "%s", value);
    return out;
}

int main(int argc, char **argv)
{
    const char *keyfile = NULL, *backend = NULL, *module = NULL, *libica = NULL;
    const char *padname = NULL, *classlist = NULL, *outfile = NULL;
    size_t rounds = 1000;
    int list = 0, opt;
    while ((opt = getopt(argc, argv, "k:b:m:l:p:c:n:o:L")) != -1) {
        switch (opt) {
        case 'k': keyfile = optarg; break;
        case 'b': backend = optarg; break;
        case 'm': module = optarg; break;
        case 'l': libica = optarg; break;
        case 'p': padname = optarg; break;
        case 'c': classlist = optarg; break;
        case 'n': rounds = strtoull(optarg, NULL, 10); break;
        case 'o': outfile = optarg; break;
        case 'L': list = 1; break;
        default: usage();
        }
    }
    if (padname == NULL)
        usage();
    enum padding pad;
    if (strcmp(padname, "pkcs1") == 0)
        pad = PKCS1;
    else if (strcmp(padname, "pkcs1-ir") == 0)
        pad = PKCS1_IR;
    else if (strcmp(padname, "oaep") == 0)
        pad = OAEP;
    else if (strcmp(padname, "raw") == 0)
        pad = RAW;
    else
        usage();
    enum padding family = pad == PKCS1_IR ? PKCS1 : pad;

    /* The classes, in the order given (or the table's). */
    const struct class *cls[NCLASSES];
    size_t nc = 0;
    if (classlist == NULL) {
        for (size_t i = 0; i < NCLASSES; i++)
            if (CLASSES[i].pad == family)
                cls[nc++] = &CLASSES[i];
    } else {
        char *copy = strdup(classlist), *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t != NULL; t = strtok_r(NULL, ",", &save)) {
            size_t i;
            for (i = 0; i < NCLASSES; i++)
                if (CLASSES[i].pad == family && strcmp(CLASSES[i].name, t) == 0)
                    break;
            if (i == NCLASSES || nc == NCLASSES) {
                fprintf(stderr, "marvin: no class %s for %s (-L lists them)\n", t, padname);
                return 2;
            }
            cls[nc++] = &CLASSES[i];
        }
    }
    if (list) {
        for (size_t i = 0; i < nc; i++)
            printf("%s\n", cls[i]->name);
        return 0;
    }
    if (keyfile == NULL || backend == NULL || nc < 2 || rounds == 0)
        usage();
    int is_rustica = strcmp(backend, "default") != 0;
    if (is_rustica && strcmp(backend, "software") != 0 && strcmp(backend, "libica") != 0)
        usage();
    if (is_rustica && module == NULL) {
        fprintf(stderr, "marvin: -b %s needs -m MODULE\n", backend);
        return 2;
    }
    if (strcmp(backend, "libica") == 0 && (libica == NULL || libica[0] != '/')) {
        fprintf(stderr, "marvin: -b libica needs -l /absolute/path/of/libica\n");
        return 2;
    }

    /* A lib context of its own, configured here (no system openssl.cnf). */
    if (OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL) != 1)
        die("OPENSSL_init_crypto");
    char *conf = write_config(backend, module, is_rustica && strcmp(backend, "libica") == 0
                                                   ? libica : NULL);
    OSSL_LIB_CTX *lib = OSSL_LIB_CTX_new();
    int loaded = lib != NULL && OSSL_LIB_CTX_load_config(lib, conf) == 1;
    unlink(conf);
    if (!loaded)
        die("loading the configuration");
    const char *propq = is_rustica ? "provider=rustica" : "provider=default";

    FILE *kf = fopen(keyfile, "r");
    if (kf == NULL) {
        fprintf(stderr, "marvin: %s: %s\n", keyfile, strerror(errno));
        return 1;
    }
    EVP_PKEY *key = PEM_read_PrivateKey_ex(kf, NULL, NULL, NULL, lib, "provider=default");
    fclose(kf);
    if (key == NULL || !EVP_PKEY_is_a(key, "RSA"))
        die("reading the RSA key");
    size_t k = (size_t)EVP_PKEY_get_size(key);
    if (k > MAXK || k < 2 * HLEN + 2 + 48 + 1)
        die("key size");
    unsigned char n[MAXK];
    BIGNUM *nbn = NULL;
    if (EVP_PKEY_get_bn_param(key, OSSL_PKEY_PARAM_RSA_N, &nbn) != 1 ||
        BN_bn2binpad(nbn, n, (int)k) != (int)k)
        die("reading n");
    BN_free(nbn);

    /* Ciphertext pools: raw RSA of each block, checked by the default provider. */
    EVP_PKEY_CTX *raw = EVP_PKEY_CTX_new_from_pkey(lib, key, "provider=default");
    if (raw == NULL || EVP_PKEY_encrypt_init(raw) != 1 ||
        EVP_PKEY_CTX_set_rsa_padding(raw, RSA_NO_PADDING) != 1)
        die("raw encryption");
    /* The check always runs with explicit rejection: a bad block must fail. */
    EVP_PKEY_CTX *check = decrypt_ctx(lib, key, "provider=default", family);
    unsigned char *ct = malloc(nc * POOL * k), *pt = malloc(nc * POOL * k);
    size_t *ptlen = malloc(nc * POOL * sizeof *ptlen);
    unsigned char *out = malloc(k), *in = malloc(k), em[MAXK];
    if (ct == NULL || pt == NULL || ptlen == NULL || out == NULL || in == NULL)
        die("malloc");
    for (size_t c = 0; c < nc; c++) {
        for (size_t i = 0; i < POOL; i++) {
            size_t at = c * POOL + i, len = k, olen = k;
            unsigned char *msg = pt + at * k;
            for (;;) {
                build(cls[c], n, k, em, msg, &ptlen[at]);
                if (pad == RAW) {
                    /* No padding: the whole block is the message. */
                    memcpy(msg, em, k);
                    ptlen[at] = k;
                }
                len = k;
                if (EVP_PKEY_encrypt(raw, ct + at * k, &len, em, k) != 1 || len != k)
                    die("raw encryption");
                olen = k;
                int ok = EVP_PKEY_decrypt(check, out, &olen, ct + at * k, k) == 1;
                ERR_clear_error();
                if (cls[c]->shape == NO_STRUCTURE && ok && pad != RAW)
                    continue; /* a random block that happens to be valid */
                if (ok != cls[c]->valid ||
                    (ok && (olen != ptlen[at] || memcmp(out, msg, olen) != 0))) {
                    fprintf(stderr, "marvin: class %s: the default provider %s block %zu\n",
                            cls[c]->name, ok ? "accepted" : "refused", i);
                    return 1;
                }
                break;
            }
        }
    }
    OPENSSL_cleanse(em, sizeof em);

    EVP_PKEY_CTX *ctx = decrypt_ctx(lib, key, propq, pad);
    const char *provname = OSSL_PROVIDER_get0_name(EVP_PKEY_CTX_get0_provider(ctx));
    if (strcmp(provname, is_rustica ? "rustica" : "default") != 0) {
        fprintf(stderr, "marvin: decryption routed to %s\n", provname);
        return 1;
    }

    uint64_t *t = malloc(rounds * nc * sizeof *t);
    if (t == NULL)
        die("malloc");
    unsigned char seed[sizeof rs];
    random_bytes(seed, sizeof seed);
    memcpy(rs, seed, sizeof rs);

    size_t wrong = 0, moved = 0, order[NCLASSES];
    unsigned cpu0 = 0;
    (void)__rdtscp(&cpu0);
    uint64_t ns0 = 0, tsc0 = 0;
    for (size_t r = 0; r < rounds + WARMUP; r++) {
        if (r == WARMUP) {
            ns0 = now_ns();
            tsc0 = __rdtsc();
        }
        for (size_t i = 0; i < nc; i++)
            order[i] = i;
        for (size_t i = nc - 1; i > 0; i--) {
            size_t j = below(i + 1), x = order[i];
            order[i] = order[j];
            order[j] = x;
        }
        for (size_t i = 0; i < nc; i++) {
            size_t c = order[i], at = c * POOL + below(POOL), olen = k;
            /* Every class is decrypted from the same buffer (and into the
             * same one): where a pool lies in memory (cache sets, pages)
             * must not become a difference between classes. */
            memcpy(in, ct + at * k, k);
            unsigned cpu;
            uint64_t t0 = tick_start();
            int ok = EVP_PKEY_decrypt(ctx, out, &olen, in, k);
            uint64_t t1 = tick_end(&cpu);
            ERR_clear_error();
            /* Outcome: valid blocks give their payload; invalid ones an error
             * (explicit rejection) or some message (implicit rejection). */
            int expect = cls[c]->valid || pad == PKCS1_IR;
            if ((ok == 1) != expect ||
                (ok == 1 && cls[c]->valid &&
                 (olen != ptlen[at] || memcmp(out, pt + at * k, olen) != 0)))
                wrong++;
            moved += (cpu & 0xfff) != (cpu0 & 0xfff);
            if (r >= WARMUP)
                t[(r - WARMUP) * nc + c] = t1 - t0;
        }
    }
    uint64_t ns1 = now_ns(), tsc1 = __rdtsc();

    FILE *o = outfile == NULL ? stdout : fopen(outfile, "w");
    if (o == NULL) {
        fprintf(stderr, "marvin: %s: %s\n", outfile, strerror(errno));
        return 1;
    }
    fprintf(o, "# marvin: %s, RSA-%d, %s, %zu rounds of %zu classes\n",
            pad == OAEP    ? "OAEP (SHA-1, MGF1-SHA-1)"
            : pad == RAW   ? "raw RSA (no padding)"
            : pad == PKCS1 ? "PKCS#1 v1.5, implicit rejection off"
                           : "PKCS#1 v1.5, implicit rejection on",
            EVP_PKEY_get_bits(key), is_rustica ? "rustica" : "default provider", rounds, nc);
    fprintf(o, "# config: %s\n", backend);
    if (is_rustica) {
        const OSSL_PROVIDER *prov = EVP_PKEY_CTX_get0_provider(ctx);
        fprintf(o, "# rustica: %s; %s\n", provider_param(prov, "buildinfo"),
                provider_param(prov, "backend"));
    }
    fprintf(o, "# openssl: %s\n", OpenSSL_version(OPENSSL_VERSION));
    fprintf(o, "# cpu: %u\n", cpu0 & 0xfff);
    fprintf(o, "# tsc_per_ns: %.6f\n", (double)(tsc1 - tsc0) / (double)(ns1 - ns0));
    fprintf(o, "# wrong_outcomes: %zu\n", wrong);
    fprintf(o, "# cpu_changes: %zu\n", moved);
    for (size_t c = 0; c < nc; c++)
        fprintf(o, "%s%c", cls[c]->name, c + 1 < nc ? ',' : '\n');
    for (size_t r = 0; r < rounds; r++)
        for (size_t c = 0; c < nc; c++)
            fprintf(o, "%llu%c", (unsigned long long)t[r * nc + c], c + 1 < nc ? ',' : '\n');
    if (o != stdout && fclose(o) != 0)
        die("writing the output");
    if (wrong != 0)
        fprintf(stderr, "marvin: %zu decryptions had the wrong outcome\n", wrong);
    return wrong != 0;
}
