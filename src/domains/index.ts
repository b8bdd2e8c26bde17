/**
 * Every domain module, in installation order. The access domain comes first: it installs the
 * authentication hooks the others rely on.
 */
import type { DomainModule } from "../core/core";
import { accessModule } from "./access";
import { registriesModule } from "./registries";

export const DOMAINS: readonly DomainModule[] = [accessModule, registriesModule];
