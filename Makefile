# SPDX-License-Identifier: GPL-2.0-only
#
# kxfer top-level Makefile.
#
#   make demo         install what is missing, build (NIXL and the plugin
#                     too), play seed 003's KV push between two guests
#                     (examples/run-demo); KXFER_DEMO_NIXL=0 leaves NIXL
#                     and the demo's NIXL step out
#   make              build kmod/kxfer.ko, tools, examples and selftests
#                     (and the NIXL plugin with NIXL_PREFIX=<NIXL install>)
#   make nixl-deps    build NIXL 1.4.0 from ../shared/third_party into
#                     /var/cache/kxfer/nixl-<hash>/ (once; about 3 min)
#   make nixl         the NIXL backend plugin and its C++ test against
#                     NIXL_PREFIX (default: the one nixl-deps built)
#   make KVER=6.12    build the module against the Debian 6.12 headers
#   make check        install what is missing, build (NIXL and the plugin
#                     too), run every test (guests on Debian 6.1 and 6.12;
#                     KXFER_KVERS=6.1 for one)
#   make check-debug  the guest suites (suite-1, suite-2, peer-death) on
#                     sanitizer kernels (KASAN, lockdep, kmemleak, UBSAN,
#                     KFENCE) built once from Debian's linux-source-6.1 and
#                     -6.12 (about an hour each, cached in build/); fails
#                     on any report; not part of make check
#                     (KXFER_KVERS=6.1 for one; KXFER_GUEST_LOCK=FILE)
#   make deps         install the Debian packages the project needs
#   make htmldocs     Documentation/ as HTML into build/htmldocs/ (Sphinx;
#                     any warning fails it; make check runs it)
#   make bench        kxfer-bench against perftest, the demo's push
#                     through NIXL against kxfer, and the connect time
#                     with and without keys, in one guest per kernel
#                     (6.1, then 6.12; BENCH_ARGS="--kver 6.1" for one),
#                     each kernel's run ending with one NIXL client over
#                     KXFER and over UCX in two guests: tables of medians
#                     and ratios, JSON in build/bench/; then the scale
#                     table, one node against 1 to 256 simulated peers
#                     (tools/bench/scale, two guests per kernel;
#                     SCALE_ARGS="--kver 6.1"), curves in
#                     build/bench/scale-*.png
#   make nixl-ucx     UCX 1.22.0 and NIXL with its UCX plugin (once,
#                     from ../shared/third_party, about 10 min, cached
#                     in /var/cache/kxfer/nixl-ucx-<hash>/), the KXFER
#                     plugin against that NIXL and the race client
#                     (tools/nixl-race), into build/nixl-ucx/
#   make install      kxferctl and its man page, libkxfer (header, libraries,
#                     pkg-config file) under $(DESTDIR)$(PREFIX), and the
#                     module for $(KDIR) under $(DESTDIR)/lib/modules
#                     (DKMS users: dkms.conf instead); with NIXL_PREFIX,
#                     the NIXL plugin into NIXL's plugins folder
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

.PHONY: all module guest-modules tools examples selftests clean deps check \
	check-debug demo bench help install nixl nixl-deps nixl-ucx htmldocs

all: module tools examples selftests $(if $(NIXL_PREFIX),nixl)

module:
	$(MAKE) -C $(KDIR) M=$(TOP) modules

# The module for each guest kernel the tests boot ($(KXFER_KVERS)), built
# out of a copy of the sources so that builds for two kernels do not
# share objects: build/modules/<release>/kxfer.ko.  Only files that
# changed are copied, so that an unchanged module is not rebuilt.  Never
# the kxfer.mod.c an in-tree build leaves in kmod/: it names the symbol
# versions of that build's kernel, and 6.12 refused a module linked
# with 6.1's ("disagrees about version of symbol module_layout").
KXFER_SRCS = $(TOP)/kmod/Kbuild $(filter-out %.mod.c,$(wildcard $(TOP)/kmod/*.[ch]))
KXFER_KVERS ?= 6.1 6.12
# test-only modules (selftests/kmod), built beside it, never installed
KXFER_TEST_SRCS = $(TOP)/selftests/kmod/Kbuild $(filter-out %.mod.c,$(wildcard $(TOP)/selftests/kmod/*.[ch]))
kxfer_sync = for f in $(1); do cmp -s $$f $(2)/$${f\#\#*/} || cp $$f $(2)/; done
guest-modules:
	@set -e; for series in $(KXFER_KVERS); do \
		rel=$$(basename $$(ls -d /usr/src/linux-headers-$$series.*-amd64 | head -n 1)); \
		rel=$${rel#linux-headers-}; \
		src=$(TOP)/build/src-$$rel; \
		mkdir -p $$src/kmod $$src/uapi/linux $(TOP)/build/modules/$$rel; \
		$(call kxfer_sync,$(TOP)/Kbuild,$$src); \
		rm -f $$src/kmod/kxfer.mod.c; \
		$(call kxfer_sync,$(KXFER_SRCS),$$src/kmod); \
		$(call kxfer_sync,$(TOP)/uapi/linux/kxfer.h,$$src/uapi/linux); \
		$(MAKE) -s -C /usr/src/linux-headers-$$rel M=$$src modules; \
		cp $$src/kmod/kxfer.ko $(TOP)/build/modules/$$rel/; \
		mkdir -p $$src/testmod; \
		$(call kxfer_sync,$(KXFER_TEST_SRCS),$$src/testmod); \
		$(MAKE) -s -C /usr/src/linux-headers-$$rel M=$$src/testmod modules; \
		cp $$src/testmod/kxfer_testbuf.ko $(TOP)/build/modules/$$rel/; \
	done

tools:
	$(MAKE) -C $(TOP)/tools/kxferctl
	$(MAKE) -C $(TOP)/tools/libkxfer
	$(MAKE) -C $(TOP)/tools/kxfer-bench

examples: tools
	$(MAKE) -C $(TOP)/examples

selftests:
	@if [ -f $(TOP)/selftests/Makefile ]; then $(MAKE) -C $(TOP)/selftests; fi

# The NIXL backend (tools/nixl) and its C++ test, into build/nixl/.  NIXL
# comes from NIXL_PREFIX, or else from the cache nixl-deps fills (built
# first if it is not there).
nixl: tools
	+@prefix='$(NIXL_PREFIX)'; \
	if [ -z "$$prefix" ]; then \
		prefix=$$(bash $(TOP)/tools/nixl/build-nixl-deps.sh --print-prefix) || exit 1; \
	fi; \
	$(MAKE) -C $(TOP)/tools/nixl NIXL_PREFIX=$$prefix && \
	$(MAKE) -C $(TOP)/selftests/nixl NIXL_PREFIX=$$prefix

nixl-deps:
	@bash $(TOP)/tools/nixl/build-nixl-deps.sh >/dev/null

# make bench's KXFER-against-UCX rows: a NIXL with the UCX plugin
# (tools/nixl/build-ucx-deps.sh), the KXFER plugin built against it and
# the race client, all in build/nixl-ucx/ with a link to NIXL's UCX
# plugin: the folder NIXL_PLUGIN_DIR names in the guests.
nixl-ucx: tools
	+@prefix=$$(bash $(TOP)/tools/nixl/build-ucx-deps.sh --print-prefix) || exit 1; \
	$(MAKE) -C $(TOP)/tools/nixl NIXL_PREFIX=$$prefix OUT=$(TOP)/build/nixl-ucx && \
	$(MAKE) -C $(TOP)/tools/nixl-race NIXL_PREFIX=$$prefix OUT=$(TOP)/build/nixl-ucx && \
	ln -sfn $$prefix/lib/x86_64-linux-gnu/plugins/libplugin_UCX.so \
		$(TOP)/build/nixl-ucx/libplugin_UCX.so

clean:
	rm -rf $(TOP)/build/nixl $(TOP)/build/nixl-ucx $(TOP)/build/htmldocs
	$(MAKE) -C $(KDIR) M=$(TOP) clean
	$(MAKE) -C $(TOP)/tools/kxferctl clean
	$(MAKE) -C $(TOP)/tools/libkxfer clean
	$(MAKE) -C $(TOP)/tools/kxfer-bench clean
	$(MAKE) -C $(TOP)/examples clean
	@if [ -f $(TOP)/selftests/Makefile ]; then $(MAKE) -C $(TOP)/selftests clean; fi

PREFIX ?= /usr/local
install: module tools $(if $(NIXL_PREFIX),nixl)
	$(MAKE) -C $(TOP)/tools/kxferctl install DESTDIR=$(DESTDIR) PREFIX=$(PREFIX)
	$(MAKE) -C $(TOP)/tools/libkxfer install DESTDIR=$(DESTDIR) PREFIX=$(PREFIX)
	$(MAKE) -C $(KDIR) M=$(TOP) INSTALL_MOD_PATH=$(abspath $(or $(DESTDIR),/)) \
		CONFIG_MODULE_SIG_ALL= modules_install
ifneq ($(NIXL_PREFIX),)
	$(MAKE) -C $(TOP)/tools/nixl install DESTDIR=$(DESTDIR) NIXL_PREFIX=$(NIXL_PREFIX)
endif

deps:
	@bash $(TOP)/tools/deps.sh

# Documentation/*.rst (the toctree of index.rst) as HTML, with Debian's
# python3-sphinx.  -W makes any warning an error, -n warns of references
# that lead nowhere, --keep-going reports every warning before failing,
# and -E reads every page again: an incremental build would not repeat
# the warnings of pages that did not change.
SPHINXBUILD ?= sphinx-build
htmldocs:
	@command -v $(SPHINXBUILD) >/dev/null || { \
		echo "make htmldocs: no $(SPHINXBUILD) (make deps installs python3-sphinx)" >&2; \
		exit 1; }
	$(SPHINXBUILD) -b html -E -n -W --keep-going -q \
		-d $(TOP)/build/htmldocs/.doctrees $(TOP)/Documentation $(TOP)/build/htmldocs

check: deps
	$(MAKE) all guest-modules
	$(MAKE) nixl NIXL_PREFIX=$$(bash $(TOP)/tools/nixl/build-nixl-deps.sh --print-prefix)
	KXFER_KVERS="$(KXFER_KVERS)" bash $(TOP)/selftests/run-suite

# The suites on the debug kernels (selftests/check-debug, which builds the
# kernels and the module for them); the NIXL backend's suite is left out.
check-debug: deps
	$(MAKE) all
	KXFER_KVERS="$(KXFER_KVERS)" bash $(TOP)/selftests/check-debug

# BENCH_ARGS: tools/bench/run's options (--kver K, repeatable, default
# both kernels; --reps N --secs S --rows "..."); SCALE_ARGS:
# tools/bench/scale's (--kver K, --peers "N ...", --profile)
bench: deps
	$(MAKE) all
	$(MAKE) guest-modules
	$(MAKE) nixl NIXL_PREFIX=$$(bash $(TOP)/tools/nixl/build-nixl-deps.sh --print-prefix)
	$(MAKE) nixl-ucx
	bash $(TOP)/tools/bench/run $(BENCH_ARGS)
	bash $(TOP)/tools/bench/scale $(SCALE_ARGS)

# The demo boots the Debian 6.1 guests (KXFER_DEMO_KVER=6.12 for the
# other).  Its NIXL step needs NIXL (built once from ../shared/third_party,
# cached in /var/cache/kxfer) and the plugin: a demo that cannot build
# them fails here, unless KXFER_DEMO_NIXL=0 leaves the step out.
KXFER_DEMO_KVER ?= 6.1
KXFER_DEMO_NIXL ?= 1
demo: deps
	$(MAKE) all guest-modules KXFER_KVERS=$(KXFER_DEMO_KVER)
ifneq ($(KXFER_DEMO_NIXL),0)
	@prefix=$$(bash $(TOP)/tools/nixl/build-nixl-deps.sh --print-prefix) && \
	$(MAKE) nixl NIXL_PREFIX=$$prefix || { \
		echo "make demo: NIXL or the KXFER plugin did not build (above); make demo KXFER_DEMO_NIXL=0 plays the demo without its NIXL step" >&2; \
		exit 1; }
endif
	KXFER_DEMO_NIXL=$(KXFER_DEMO_NIXL) bash $(TOP)/examples/run-demo --kver $(KXFER_DEMO_KVER)

help:
	@sed -n '3,/^# KDIR defaults/p' $(TOP)/Makefile | sed '$$d'
