# SPDX-License-Identifier: GPL-2.0-only
#
# kxfer top-level Makefile.
#
#   make              build kmod/kxfer.ko, tools and selftests
#   make KVER=6.12    build the module against the Debian 6.12 headers
#   make check        install what is missing, build, run every test (guests
#                     on Debian 6.1 and 6.12; KXFER_KVERS=6.1 for one)
#   make deps         install the Debian packages the project needs
#   make bench        kxfer-bench against perftest in one guest (6.1): table
#                     of medians and ratios, JSON in build/bench/
#
# KDIR defaults to the running kernel's build tree when it exists, else
# to the installed Debian 6.1 (linux-headers-amd64) headers.

TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))

# Resolve a kernel release from the Debian header metapackages.
kxfer_hdr = $(patsubst /usr/src/linux-headers-%,%,$(firstword $(wildcard /usr/src/linux-headers-$(1)*-amd64)))

ifeq ($(KVER),6.12)
KREL := $(call kxfer_hdr,6.12.)
else ifeq ($(KVER),6.1)
KREL := $(call kxfer_hdr,6.1.)
else ifneq ($(KVER),)
KREL := $(KVER)
endif

ifneq ($(KREL),)
KDIR ?= /usr/src/linux-headers-$(KREL)
else ifneq ($(wildcard /lib/modules/$(shell uname -r)/build/Makefile),)
KDIR ?= /lib/modules/$(shell uname -r)/build
else
KDIR ?= /usr/src/linux-headers-$(call kxfer_hdr,6.1.)
endif

.PHONY: all module guest-modules tools selftests clean deps check bench help

all: module tools selftests

module:
	$(MAKE) -C $(KDIR) M=$(TOP) modules

# The module for each guest kernel the tests boot ($(KXFER_KVERS)), built
# out of a copy of the sources so that builds for two kernels do not
# share objects: build/modules/<release>/kxfer.ko.
KXFER_KVERS ?= 6.1 6.12
guest-modules:
	@set -e; for series in $(KXFER_KVERS); do \
		rel=$$(basename $$(ls -d /usr/src/linux-headers-$$series.*-amd64 | head -n 1)); \
		rel=$${rel#linux-headers-}; \
		src=$(TOP)/build/src-$$rel; \
		mkdir -p $$src/kmod $$src/uapi/linux $(TOP)/build/modules/$$rel; \
		cp $(TOP)/Kbuild $$src/; \
		cp $(TOP)/kmod/Kbuild $(TOP)/kmod/*.[ch] $$src/kmod/; \
		cp $(TOP)/uapi/linux/kxfer.h $$src/uapi/linux/; \
		$(MAKE) -s -C /usr/src/linux-headers-$$rel M=$$src modules; \
		cp $$src/kmod/kxfer.ko $(TOP)/build/modules/$$rel/; \
	done

tools:
	$(MAKE) -C $(TOP)/tools/kxferctl
	$(MAKE) -C $(TOP)/tools/libkxfer
	$(MAKE) -C $(TOP)/tools/kxfer-bench

selftests:
	@if [ -f $(TOP)/selftests/Makefile ]; then $(MAKE) -C $(TOP)/selftests; fi

clean:
	$(MAKE) -C $(KDIR) M=$(TOP) clean
	$(MAKE) -C $(TOP)/tools/kxferctl clean
	$(MAKE) -C $(TOP)/tools/libkxfer clean
	$(MAKE) -C $(TOP)/tools/kxfer-bench clean
	@if [ -f $(TOP)/selftests/Makefile ]; then $(MAKE) -C $(TOP)/selftests clean; fi

deps:
	@bash $(TOP)/tools/deps.sh

check: deps
	$(MAKE) all guest-modules
	KXFER_KVERS="$(KXFER_KVERS)" bash $(TOP)/selftests/run-suite

# BENCH_ARGS: tools/bench/run's options (--reps N --secs S --rows "...")
bench: deps
	$(MAKE) all
	$(MAKE) guest-modules KXFER_KVERS=6.1
	bash $(TOP)/tools/bench/run $(BENCH_ARGS)

help:
	@sed -n '3,15p' $(TOP)/Makefile
