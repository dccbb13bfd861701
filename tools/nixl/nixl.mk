# SPDX-License-Identifier: Apache-2.0
#
# nixl.mk: where a NIXL install keeps what a plugin and a program built
# against it need, for tools/nixl/Makefile and selftests/nixl/Makefile.
#
# In (make or environment variables):
#   NIXL_PREFIX      NIXL's install prefix (required)
#   NIXL_LIBDIR      its libraries (default: the first of lib/x86_64-linux-gnu,
#                    lib64 and lib under the prefix that holds libnixl.so)
#   NIXL_ABSL        a folder holding absl/log/log.h, the abseil NIXL was
#                    built with (default: searched, below)
#   NIXL_SRC         the NIXL source tree the install was built from: its
#                    subprojects/abseil-cpp-* is that abseil, and its
#                    src/bindings/python/nixl-meta the Python package nixl
#   NIXL_PYTHONPATH  where Python finds `import nixl`, for the tests
#                    (default: searched, below)
# Out:
#   NIXL_CPPFLAGS    -isystem flags for NIXL's headers and abseil's
#   NIXL_LIBDIR, NIXL_PYTHONPATH
#
# NIXL's installed headers (utils/common/nixl_log.h, which the plugin API
# includes) include <absl/log/log.h>, and their logging macros call into
# the abseil that libnixl_common.so was built with (abseil's symbols carry
# its LTS version, lts_YYYYMMDD).  NIXL builds abseil as a meson
# subproject and does not install its headers, so an ordinary install has
# none.  They are looked for, in order, in NIXL_ABSL, in the prefix's
# include folder, in NIXL_SRC/subprojects, beside the prefix where
# tools/nixl/build-nixl-deps.sh keeps its sources (PREFIX/../nixl-src),
# through pkg-config (absl_log, with the prefix's pkgconfig folders
# first), and in the compiler's own include folders; what is found must
# be the LTS version libnixl_common.so names, or the build stops here and
# says so.

ifeq ($(NIXL_PREFIX),)
$(error NIXL_PREFIX is not set: NIXL's install prefix (tools/nixl/build-nixl-deps.sh --print-prefix builds one))
endif

nixl_space	:= $(eval) $(eval)
nixl_libdirs	:= $(NIXL_PREFIX)/lib/x86_64-linux-gnu $(NIXL_PREFIX)/lib64 $(NIXL_PREFIX)/lib
NIXL_LIBDIR	?= $(patsubst %/libnixl.so,%,$(firstword $(wildcard $(addsuffix /libnixl.so,$(nixl_libdirs)))))

# the folder holding absl/log/log.h among $(1), or nothing
nixl_absl_in	= $(patsubst %/absl/log/log.h,%,$(firstword $(wildcard $(addsuffix /absl/log/log.h,$(1)))))

nixl_pkgconfig	:= $(subst $(nixl_space),:,$(wildcard $(NIXL_LIBDIR)/pkgconfig $(NIXL_PREFIX)/share/pkgconfig))
nixl_absl_pc	= $(shell PKG_CONFIG_PATH='$(nixl_pkgconfig)'$${PKG_CONFIG_PATH:+:$$PKG_CONFIG_PATH} \
			pkg-config --variable=includedir absl_log 2>/dev/null)

ifeq ($(NIXL_ABSL),)
NIXL_ABSL	:= $(call nixl_absl_in,$(NIXL_PREFIX)/include)
ifeq ($(NIXL_ABSL),)
NIXL_ABSL	:= $(call nixl_absl_in,$(if $(NIXL_SRC),$(wildcard $(NIXL_SRC)/subprojects/abseil-cpp-*)))
endif
ifeq ($(NIXL_ABSL),)
NIXL_ABSL	:= $(call nixl_absl_in,$(wildcard $(NIXL_PREFIX)/../nixl-src/subprojects/abseil-cpp-*))
endif
ifeq ($(NIXL_ABSL),)
NIXL_ABSL	:= $(call nixl_absl_in,$(nixl_absl_pc))
endif
ifeq ($(NIXL_ABSL),)
NIXL_ABSL	:= $(call nixl_absl_in,/usr/local/include /usr/include)
endif
endif

# the Python package: `import nixl` is NIXL's nixl-meta package, which
# NIXL's sources have (or a pip install) and meson does not install, and
# the binding it loads, nixl_cu12 or nixl_cu13, is installed under the
# prefix
nixl_pydirs	:= $(wildcard $(if $(NIXL_SRC),$(NIXL_SRC)/src/bindings/python/nixl-meta) \
			$(NIXL_PREFIX)/../build/src/bindings/python/nixl-meta \
			$(NIXL_PREFIX)/lib/python3/dist-packages \
			$(NIXL_PREFIX)/lib/python3*/site-packages \
			$(NIXL_PREFIX)/lib/python3*/dist-packages)
NIXL_PYTHONPATH	?= $(subst $(nixl_space),:,$(sort $(nixl_pydirs)))

nixl_building	:= $(filter-out clean,$(or $(MAKECMDGOALS),all))

ifneq ($(nixl_building),)
ifeq ($(NIXL_LIBDIR),)
$(error no libnixl.so under NIXL_PREFIX=$(NIXL_PREFIX) (lib/x86_64-linux-gnu, lib64, lib): is it NIXL's install prefix? NIXL_LIBDIR=... names the folder)
endif
ifeq ($(NIXL_ABSL),)
$(error NIXL's headers include <absl/log/log.h>, which NIXL does not install: give the abseil NIXL was built with, NIXL_SRC=<the NIXL source tree it was built from> (its subprojects/abseil-cpp-*) or NIXL_ABSL=<a folder holding absl/log/log.h>)
endif
nixl_absl_lts	:= $(shell sed -n 's/^\#define ABSL_LTS_RELEASE_VERSION *\([0-9]*\).*/\1/p' \
			$(NIXL_ABSL)/absl/base/config.h 2>/dev/null)
nixl_lib_lts	:= $(patsubst lts_%,%,$(shell grep -ao 'lts_20[0-9]\{6\}' $(NIXL_LIBDIR)/libnixl_common.so 2>/dev/null | head -n 1))
ifneq ($(nixl_lib_lts),)
ifneq ($(nixl_absl_lts),$(nixl_lib_lts))
$(error abseil in $(NIXL_ABSL) is LTS $(or $(nixl_absl_lts),unknown), but $(NIXL_LIBDIR)/libnixl_common.so was built with LTS $(nixl_lib_lts): give that abseil with NIXL_ABSL=... or NIXL_SRC=...)
endif
endif
endif

NIXL_CPPFLAGS	:= -isystem $(NIXL_PREFIX)/include -isystem $(NIXL_PREFIX)/include/utils \
		   $(if $(filter-out /usr/include /usr/local/include,$(NIXL_ABSL)),-isystem $(NIXL_ABSL))

# OUT/nixl-env: the NIXL a build used, as shell assignments; it changes
# when another NIXL is named, which rebuilds what depends on it, and the
# tests in the guests (selftests/guest/common.sh, nixl_env), which see
# the host's file system, take NIXL from there
define nixl_env_file
NIXL_PREFIX=$(abspath $(NIXL_PREFIX))
NIXL_LIBDIR=$(abspath $(NIXL_LIBDIR))
NIXL_ABSL=$(if $(NIXL_ABSL),$(abspath $(NIXL_ABSL)))
NIXL_PYTHONPATH=$(NIXL_PYTHONPATH)
endef
export nixl_env_file

# $(call nixl_write_env,FILE): write it if it changed
nixl_write_env	= mkdir -p $(dir $(1)) && printf '%s\n' "$$nixl_env_file" | cmp -s - $(1) || \
		  printf '%s\n' "$$nixl_env_file" >$(1)
