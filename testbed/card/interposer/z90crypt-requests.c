/*
 * z90crypt-card's requests (z90crypt-card.c has the overview): the
 * kernel's rules for ICARSAMODEXPO and ICARSACRT, and its status and
 * queue depth masks from the card's "status" answer.
 */
#include "z90crypt-card.h"

/* ---- ICARSAMODEXPO and ICARSACRT ---- */

/* Appends `n` bytes from the caller's buffer; -1 for a NULL buffer. */
static int append(unsigned char **at, const unsigned char *from, size_t n)
{
    if (from == NULL)
        return -1;
    memcpy(*at, from, n);
    *at += n;
    return 0;
}

/*
 * The kernel's rules (drivers/s390/crypto), in its order:
 * - zcrypt_api.c (zcrypt_rsa_modexpo, zcrypt_rsa_crt): outputdatalength
 *   below inputdatalength is EINVAL; otherwise the request's
 *   outputdatalength becomes inputdatalength, "the number of bytes we
 *   will copy in any case".
 * - zcrypt_msgtype50.c (get_rsa_modex_fc, get_rsa_crt_fc): a length of 0
 *   is EINVAL; any other is taken, from 1 byte.
 * - zcrypt_api.c: no card takes more than its max_mod_size (512 bytes for
 *   CEX4..8, zcrypt_cex4.c): ENODEV.
 * - zcrypt_msgtype50.c (convert_type80): the result, outputdatalength
 *   (= inputdatalength) bytes, is copied to the start of outputdata and
 *   nothing after it is written.
 * - zcrypt_api.c (icarsamodexpo_ioctl, icarsacrt_ioctl): EAGAIN is tried
 *   again, TRACK_AGAIN_MAX (10) attempts in all, then EIO; on success,
 *   outputdatalength is written back to the caller's structure.
 * - zcrypt_msgtype50.c (ICACRT_msg_to_type50CRT_msg): a CRT request's
 *   short operands (q, dq) are (L + 1) / 2 bytes, the long ones (p, dp,
 *   qInverse) 8 more, for an odd L too.
 * The card's frame carries the request's real length L and those operand
 * lengths (testbed/card/src/wire.rs), whatever L is.
 */
int rsa_request(int crt, void *arg)
{
    size_t len, half, total;
    unsigned char *payload, *at, *result, *out;
    unsigned int *out_len;
    int rc, attempt;

    if (arg == NULL)
        return EFAULT;
    if (crt) {
        struct ica_rsa_modexpo_crt *r = arg;
        len = r->inputdatalength;
        out = (unsigned char *)r->outputdata;
        out_len = &r->outputdatalength;
    } else {
        struct ica_rsa_modexpo *r = arg;
        len = r->inputdatalength;
        out = (unsigned char *)r->outputdata;
        out_len = &r->outputdatalength;
    }
    if (*out_len < len || len == 0)
        return EINVAL;
    if (len > MAX_MOD_BYTES)
        return ENODEV;
    half = (len + 1) / 2;
    total = crt ? len + 3 * (half + 8) + 2 * half : 3 * len;
    payload = malloc(total + len);
    if (payload == NULL)
        return ENOMEM;
    at = payload;
    if (crt) {
        struct ica_rsa_modexpo_crt *r = arg;
        rc = append(&at, (const unsigned char *)r->inputdata, len)
             || append(&at, (const unsigned char *)r->np_prime, half + 8)
             || append(&at, (const unsigned char *)r->nq_prime, half)
             || append(&at, (const unsigned char *)r->bp_key, half + 8)
             || append(&at, (const unsigned char *)r->bq_key, half)
             || append(&at, (const unsigned char *)r->u_mult_inv, half + 8);
    } else {
        struct ica_rsa_modexpo *r = arg;
        rc = append(&at, (const unsigned char *)r->inputdata, len)
             || append(&at, (const unsigned char *)r->n_modulus, len)
             || append(&at, (const unsigned char *)r->b_key, len);
    }
    if (rc != 0 || out == NULL) {
        rc = EFAULT;
        goto out;
    }
    result = payload + total;
    for (attempt = 1;; attempt++) {
        rc = exchange(crt ? KIND_CRT : KIND_MOD_EXPO, (uint32_t)len, payload, total, result, len);
        if (rc != EAGAIN || attempt >= AGAIN_MAX)
            break;
    }
    if (rc == EAGAIN)
        rc = EIO;
    if (rc == 0) {
        memcpy(out, result, len);
        *out_len = (unsigned int)len;
    }
out:
    /* The operands include private key parts. */
    explicit_bzero(payload, total + len);
    free(payload);
    return rc;
}

/* ---- the status ioctls ---- */

/* The next space-separated word of *p: its start, and its length in *n. */
static const char *next_word(const char **p, size_t *n)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\n')
        s++;
    *p = s;
    while (**p != 0 && **p != ' ' && **p != '\n')
        (*p)++;
    *n = (size_t)(*p - s);
    return s;
}

static int is_word(const char **p, const char *want)
{
    size_t n;
    const char *w = next_word(p, &n);
    return n == strlen(want) && memcmp(w, want, n) == 0;
}

/* A decimal number of at most 9 digits; -1 for anything else. */
static long number_word(const char **p)
{
    size_t n;
    const char *w = next_word(p, &n);
    long v = 0;

    if (n == 0 || n > 9)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (w[i] < '0' || w[i] > '9')
            return -1;
        v = v * 10 + (w[i] - '0');
    }
    return v;
}

/*
 * The card's "status" answer: "cards N depth D online O1 ... ON", and
 * from newer cards " pending P1 ... PN" after it (each card's requests
 * queued and in service now; 0 when the card does not say). Fills
 * `mask` (n entries, zero past the cards) with each card's type or its
 * count, as the kernel's zcrypt_status_mask and zcrypt_qdepth_mask do.
 * A malformed answer is EIO.
 */
int status_mask(unsigned char *mask, size_t n, int depth_not_type)
{
    char text[1024];
    const char *p = text, *mark;
    long cards, value;
    int rc;

    rc = exchange(KIND_CONTROL, 6, (const unsigned char *)"status", 6, (unsigned char *)text,
                  sizeof(text));
    if (rc != 0)
        return rc;
    if (!is_word(&p, "cards") || (cards = number_word(&p)) < 1 || !is_word(&p, "depth")
        || number_word(&p) < 0 || !is_word(&p, "online"))
        return EIO;
    memset(mask, 0, n);
    for (long i = 0; i < cards; i++) {
        size_t len;
        const char *w = next_word(&p, &len);
        if (len != 1 || (w[0] != '0' && w[0] != '1'))
            return EIO;
        if (!depth_not_type && (size_t)i < n)
            mask[i] = w[0] == '1' ? 0x0c : 0x0d;
    }
    mark = p;
    if (!is_word(&p, "pending")) {
        size_t len;
        p = mark;
        next_word(&p, &len);
        return len == 0 ? 0 : EIO;
    }
    for (long i = 0; i < cards; i++) {
        if ((value = number_word(&p)) < 0)
            return EIO;
        if (depth_not_type && (size_t)i < n)
            mask[i] = (unsigned char)(value > 255 ? 255 : value);
    }
    return 0;
}
