/**
 * Schemas of the status routes. PublicStatusResponse and its parts are the spec's; the admin
 * schemas (components, transitions) fill a gap the spec leaves (DESIGN.md §3).
 */
import { t } from "elysia";

export const ComponentState = t.Union([t.Literal("operational"), t.Literal("degraded"), t.Literal("down")]);
export type ComponentState = typeof ComponentState.static;

export const PublicComponent = t.Object({
  name: t.String(),
  since: t.String(),
  slug: t.String(),
  state: ComponentState,
});

export const PublicIncident = t.Object({
  name: t.String(),
  resolved_at: t.Optional(t.Union([t.String(), t.Null()], { description: "null while ongoing" })),
  slug: t.String(),
  started_at: t.String(),
  state: ComponentState,
});
export type PublicIncident = typeof PublicIncident.static;

export const PublicStatusResponse = t.Object({
  components: t.Array(t.Ref("PublicComponent")),
  generated_at: t.String(),
  incidents: t.Array(t.Ref("PublicIncident"), { description: "Folded from roughly the last 30 days of transitions, newest first" }),
  state: ComponentState,
});
export interface PublicStatusResponse {
  components: Array<typeof PublicComponent.static>;
  generated_at: string;
  incidents: PublicIncident[];
  state: ComponentState;
}

export const StatusComponentResponse = t.Object({
  slug: t.String(),
  name: t.String(),
  state: ComponentState,
  since: t.String(),
  platform: t.Boolean({ description: "One of the platform's own components; cannot be removed" }),
});
export type StatusComponentResponse = typeof StatusComponentResponse.static;

export const WriteStatusComponentBody = t.Object({
  slug: t.String({ description: "Lower-case letters, digits and dashes" }),
  name: t.String({ minLength: 1, maxLength: 100 }),
  state: t.Optional(ComponentState),
});
export type WriteStatusComponentBody = typeof WriteStatusComponentBody.static;

export const WriteStatusTransitionBody = t.Object({
  state: ComponentState,
  reason: t.Optional(t.String({ maxLength: 500, description: "For operators; never shown publicly" })),
});
export type WriteStatusTransitionBody = typeof WriteStatusTransitionBody.static;

export const StatusTransitionResponse = t.Object({
  id: t.Integer(),
  component: t.String(),
  from: ComponentState,
  to: ComponentState,
  at: t.String(),
  reason: t.String(),
  source: t.String(),
});
export type StatusTransitionResponse = typeof StatusTransitionResponse.static;

export const statusModels = {
  PublicComponent,
  PublicIncident,
  PublicStatusResponse,
  StatusComponentResponse,
  WriteStatusComponentBody,
  WriteStatusTransitionBody,
  StatusTransitionResponse,
};
