/**
 * What builds and deploys report back to GitHub: check runs (`POST/PATCH check-runs`), commit
 * statuses (`POST statuses/{sha}`), deployments (`POST deployments`, with `auto_merge: false` and no
 * required contexts, so GitHub records the deployment of exactly that commit instead of merging
 * or waiting on checks) and their statuses. Each returns GitHub's id.
 */
import { OpsError } from "../../../core/errors";
import type { CheckRunInput, CommitStatusInput, DeploymentInput, DeploymentStatusInput } from "../types";
import { repoPath, type GithubClient } from "./client";
import { SHA_RE, type Installed } from "./reads";

/** GitHub wants both title and summary in a check run's output, or no output. */
function output(input: { title?: string; summary?: string }) {
  if (input.title === undefined && input.summary === undefined) return undefined;
  return { title: input.title ?? "", summary: input.summary ?? "" };
}

function idOf(data: { id?: unknown }, what: string): number {
  if (typeof data.id !== "number") throw new OpsError("bad_gateway", `GitHub's answer to ${what} carries no id.`);
  return data.id;
}

export class Reports {
  constructor(private readonly client: GithubClient) {}

  async createCheckRun(ref: Installed, input: CheckRunInput): Promise<number> {
    if (!SHA_RE.test(input.headSha)) throw new OpsError("not_found", `No commit ${input.headSha} in ${ref.repo}.`);
    const r = await this.client.call<{ id?: number }>({
      method: "POST",
      path: `${repoPath(ref.repo)}/check-runs`,
      auth: { installation: ref.installationId },
      body: { name: input.name, head_sha: input.headSha, status: input.status, conclusion: input.conclusion, details_url: input.detailsUrl, output: output(input) },
    });
    return idOf(r.data, "a new check run");
  }

  async updateCheckRun(ref: Installed, id: number, input: Partial<Omit<CheckRunInput, "headSha">>): Promise<void> {
    await this.client.call({
      method: "PATCH",
      path: `${repoPath(ref.repo)}/check-runs/${id}`,
      auth: { installation: ref.installationId },
      body: { name: input.name, status: input.status, conclusion: input.conclusion, details_url: input.detailsUrl, output: output(input) },
    });
  }

  async setCommitStatus(ref: Installed, sha: string, input: CommitStatusInput): Promise<number> {
    if (!SHA_RE.test(sha)) throw new OpsError("not_found", `No commit ${sha} in ${ref.repo}.`);
    const r = await this.client.call<{ id?: number }>({
      method: "POST",
      path: `${repoPath(ref.repo)}/statuses/${sha}`,
      auth: { installation: ref.installationId },
      body: { state: input.state, context: input.context, description: input.description, target_url: input.targetUrl },
    });
    return idOf(r.data, "a commit status");
  }

  async createDeployment(ref: Installed, input: DeploymentInput): Promise<number> {
    const r = await this.client.call<{ id?: number; message?: string }>({
      method: "POST",
      path: `${repoPath(ref.repo)}/deployments`,
      auth: { installation: ref.installationId },
      body: { ref: input.sha, environment: input.environment, description: input.description, auto_merge: false, required_contexts: [] },
    });
    return idOf(r.data, "a new deployment");
  }

  async createDeploymentStatus(ref: Installed, deploymentId: number, input: DeploymentStatusInput): Promise<number> {
    const r = await this.client.call<{ id?: number }>({
      method: "POST",
      path: `${repoPath(ref.repo)}/deployments/${deploymentId}/statuses`,
      auth: { installation: ref.installationId },
      body: { state: input.state, description: input.description, environment_url: input.environmentUrl, log_url: input.logUrl },
    });
    return idOf(r.data, "a deployment status");
  }
}
