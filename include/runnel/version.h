/* The runtime's version. Built-in plugins (REF) report it as theirs. */
#ifndef RUNNEL_VERSION_H
#define RUNNEL_VERSION_H

#define RN_VERSION_MAJOR 0
#define RN_VERSION_MINOR 2
#define RN_VERSION_PATCH 0

#define RN_VERSION_STR_(x) #x
#define RN_VERSION_STR(x)  RN_VERSION_STR_(x)
/* "0.2.0" */
#define RN_VERSION_STRING                                                                          \
    RN_VERSION_STR(RN_VERSION_MAJOR)                                                               \
    "." RN_VERSION_STR(RN_VERSION_MINOR) "." RN_VERSION_STR(RN_VERSION_PATCH)

#endif /* RUNNEL_VERSION_H */
