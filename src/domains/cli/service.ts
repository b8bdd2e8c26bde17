/**
 * The CLI domain's public surface: releases of the ops binary, install codes and the installer.
 */
export { publishOwnBinary, runningBinary } from "./self-publish";
export { publishRelease, currentRelease, openRelease, anyReleasePublished, toReleaseResponse, hostTarget, isKnownTarget, KNOWN_TARGETS, VERSION_PATTERN, type PublishInput } from "./releases";
export { createInstallCode, redeemInstallCode, renderInstaller, installerRefusal, installCommand, shellQuote, INSTALL_CODE_TTL_S, INSTALLER_TOKEN_NAME } from "./install";
