/* Sanitizer defaults for runnel's tests (empty in other builds).
 *
 * Criterion keeps a few bytes allocated in its runner that it never frees
 * (reported from inside libcriterion.so, not from runnel's code): LeakSanitizer
 * is told to ignore leaks whose allocation stack is in libcriterion only. */
#if defined(__SANITIZE_ADDRESS__)
const char *__lsan_default_suppressions(void);

const char *__lsan_default_suppressions(void)
{
    return "leak:libcriterion.so\n";
}
#else
/* ISO C forbids an empty translation unit. */
typedef int rn_sanitizer_defaults_unused;
#endif
