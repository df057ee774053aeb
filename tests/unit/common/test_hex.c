/* Unit tests of common/hex.h against strtoull: every digit in every
 * position, random numbers, and each kind of byte that is not a digit. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hex.h"

static void check_valid(const char *s) {
    uint64_t v = 0;
    cr_assert(hr_hex16(s, &v), "%s parses", s);
    cr_assert_eq(v, strtoull(s, NULL, 16), "%s: %llx", s, (unsigned long long)v);
}

Test(hex, agrees_with_strtoull) {
    const char digits[] = "0123456789abcdef";
    char s[17] = "0000000000000000";
    for (int pos = 0; pos < 16; pos++)
        for (int d = 0; d < 16; d++) {
            memset(s, '0', 16);
            s[pos] = digits[d];
            check_valid(s);
        }
    check_valid("ffffffffffffffff");
    srand(3);
    for (int i = 0; i < 100000; i++) {
        for (int j = 0; j < 16; j++)
            s[j] = digits[rand() % 16];
        check_valid(s);
    }
}

Test(hex, rejects_what_is_not_a_lower_case_digit) {
    /* every byte value in every position of an otherwise valid number */
    for (int pos = 0; pos < 16; pos++)
        for (int c = 0; c < 256; c++) {
            char s[17] = "0123456789abcdef";
            s[pos] = (char)c;
            bool digit = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
            uint64_t v;
            cr_assert_eq(hr_hex16(s, &v), digit, "byte 0x%02x at %d", c, pos);
        }
}
