/* SLOWDEV, the simulated accelerator used by the behaviour suite, the stress
 * tests and bench/pipeline (see slowdev.c). */
#ifndef RUNNEL_TESTS_SLOWDEV_SLOWDEV_H
#define RUNNEL_TESTS_SLOWDEV_SLOWDEV_H

#include "runnel/plugin.h"

extern const rn_plugin_ops slowdev_plugin_ops;

/* The shared object's entry point. */
const rn_plugin_ops *rn_plugin_entry(uint32_t abi_version);

#endif /* RUNNEL_TESTS_SLOWDEV_SLOWDEV_H */
