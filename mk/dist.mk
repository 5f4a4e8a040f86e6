# mk/dist.mk - the version, `make install`/`make uninstall` and `make deb`
# (included at the end of the Makefile; kept apart so build changes and
# packaging changes merge independently).
#
#   make install   [PREFIX=/usr/local] [DESTDIR=] [BINDIR= LIBDIR= INCLUDEDIR= MANDIR=
#                   PKGCONFIGDIR= UNITDIR= SYSCONFDIR=]
#   make uninstall (same variables): removes exactly what install put there,
#                   and the configuration file only while it is unchanged
#   make deb       build/deb/btrace-bpf_VERSION_ARCH.deb and libbtrace-dev_...,
#                   built by dpkg-buildpackage (debhelper) from a copy of the
#                   tracked sources, then checked by lintian

VERSION := $(shell cat VERSION)
# One version for the tool, the manifests, the .pc file and the package
# (debian/changelog is checked against it by tests/system/test_install.sh).
CPPFLAGS += -DBT_VERSION='"$(VERSION)"'
$(OUT)/user/main.o: VERSION

PREFIX       ?= /usr/local
BINDIR       ?= $(PREFIX)/bin
LIBDIR       ?= $(PREFIX)/lib
INCLUDEDIR   ?= $(PREFIX)/include
MANDIR       ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
UNITDIR      ?= $(PREFIX)/lib/systemd/system
# /usr installs configure /etc, anything else its own PREFIX/etc.
SYSCONFDIR   ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
STATEDIR     ?= /var/lib/btrace-bpf
INSTALL      ?= install

# Files generated from dist/*.in: paths substituted, nothing else.
DIST_SUBST = sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
	-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@PREFIX@|$(PREFIX)|g' \
	-e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@STATEDIR@|$(STATEDIR)|g' \
	-e 's|@VERSION@|$(VERSION)|g'

# Regenerated on every install: the paths are make variables, not files.
.PHONY: dist-files install uninstall deb FORCE
dist-files: $(OUT)/dist/libbtrace.pc $(OUT)/dist/btrace-bpf.service
$(OUT)/dist/%: dist/%.in FORCE
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D) && $(DIST_SUBST) $< > $@.tmp && mv $@.tmp $@
FORCE:

# The installed files, relative to DESTDIR (uninstall removes these).
INSTALLED = $(BINDIR)/btrace-bpf $(LIBDIR)/libbtrace.a $(INCLUDEDIR)/btrace.h \
	$(PKGCONFIGDIR)/libbtrace.pc $(MANDIR)/man1/btrace-bpf.1 $(MANDIR)/man3/btrace.3 \
	$(UNITDIR)/btrace-bpf.service

install: $(OUT)/btrace-bpf $(OUT)/libbtrace.a dist-files
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR) \
		$(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man3 \
		$(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSCONFDIR)
	$(Q)$(INSTALL) -m 0755 $(OUT)/btrace-bpf $(DESTDIR)$(BINDIR)/btrace-bpf
	$(Q)$(INSTALL) -m 0644 $(OUT)/libbtrace.a $(DESTDIR)$(LIBDIR)/libbtrace.a
	$(Q)$(INSTALL) -m 0644 user/lib/btrace.h $(DESTDIR)$(INCLUDEDIR)/btrace.h
	$(Q)$(INSTALL) -m 0644 $(OUT)/dist/libbtrace.pc $(DESTDIR)$(PKGCONFIGDIR)/libbtrace.pc
	$(Q)$(INSTALL) -m 0644 man/btrace-bpf.1 $(DESTDIR)$(MANDIR)/man1/btrace-bpf.1
	$(Q)$(INSTALL) -m 0644 man/btrace.3 $(DESTDIR)$(MANDIR)/man3/btrace.3
	$(Q)$(INSTALL) -m 0644 $(OUT)/dist/btrace-bpf.service $(DESTDIR)$(UNITDIR)/btrace-bpf.service
	$(Q)# An operator's configuration is never overwritten.
	$(Q)if [ -e $(DESTDIR)$(SYSCONFDIR)/btrace-bpf.conf ]; then \
		echo "  kept     $(DESTDIR)$(SYSCONFDIR)/btrace-bpf.conf (exists; the default is dist/btrace-bpf.conf)"; \
	else $(INSTALL) -m 0644 dist/btrace-bpf.conf $(DESTDIR)$(SYSCONFDIR)/btrace-bpf.conf; fi

uninstall:
	$(call msg,UNINST,$(DESTDIR)$(PREFIX))
	$(Q)rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	$(Q)# Only the configuration we installed, unedited; dumps are never touched.
	$(Q)c=$(DESTDIR)$(SYSCONFDIR)/btrace-bpf.conf; if [ -e $$c ]; then \
		if cmp -s $$c dist/btrace-bpf.conf; then rm -f $$c; \
		else echo "  kept     $$c (edited)"; fi; fi

# ---- Debian packages ------------------------------------------------------------
# dpkg-buildpackage writes its results next to the source directory, so it
# runs on a copy of the tracked files under build/deb: the tree stays clean
# and nothing is written outside build/.
DEB_DIR := $(OUT)/deb
DEB_SRC := $(DEB_DIR)/btrace-bpf-$(VERSION)
DEB_ARCH = $(shell dpkg --print-architecture)

deb:
	$(Q)command -v dpkg-buildpackage >/dev/null && command -v dh >/dev/null || \
		{ echo "make deb: needs dpkg-dev and debhelper (scripts/install-deps.sh installs them)" >&2; exit 1; }
	$(call msg,DEB,$(DEB_DIR))
	$(Q)rm -rf $(DEB_DIR) && mkdir -p $(DEB_SRC)
	$(Q)# Tracked and new (not ignored) files: a work in progress packages as it is.
	$(Q)git ls-files -z --cached --others --exclude-standard | \
		xargs -0 sh -c 'for f; do [ -f "$$f" ] && printf "%s\0" "$$f"; done' sh | \
		xargs -0 cp --parents -t $(DEB_SRC)
	$(Q)# The package version follows VERSION; the changelog entry carries it.
	$(Q)sed '1s/([^)]*)/($(VERSION))/' debian/changelog > $(DEB_SRC)/debian/changelog.new && \
		mv $(DEB_SRC)/debian/changelog.new $(DEB_SRC)/debian/changelog
	$(Q)cd $(DEB_SRC) && dpkg-buildpackage -b -us -uc -j2 >../build.log 2>&1 || \
		{ tail -40 ../build.log >&2; echo "make deb: dpkg-buildpackage failed: $(DEB_DIR)/build.log" >&2; exit 1; }
	$(Q)if command -v lintian >/dev/null; then \
		lintian --fail-on error $(DEB_DIR)/btrace-bpf_$(VERSION)_$(DEB_ARCH).changes > $(DEB_DIR)/lintian.log 2>&1; \
		s=$$?; cat $(DEB_DIR)/lintian.log; [ $$s -eq 0 ] || { echo "make deb: lintian found errors" >&2; exit 1; }; \
	else echo "make deb: lintian not installed: packages not checked" >&2; fi
	$(Q)ls -1 $(DEB_DIR)/*.deb
