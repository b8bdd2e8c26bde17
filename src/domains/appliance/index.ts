/** The appliance domain module: the server's self-update route (the console's update button). */
import type { DomainModule } from "../../core/core";
import { applianceRoutes } from "./routes";

export const applianceModule: DomainModule = { name: "appliance", routes: applianceRoutes };
