import { describe, test, expect } from "bun:test";
import { scrub } from "./scrub";

describe("scrub", () => {
  test("ops secrets, bearer and basic credentials", () => {
    expect(scrub("token opst_4fJq8hZk2LmN5pQr7sTv9wXy1zA3bC6dE8gH0jK2mN4 used")).toBe("token [redacted] used");
    expect(scrub("cookie opss_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")).toBe("cookie [redacted]");
    expect(scrub("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-nature_x")).toBe("Authorization: Bearer [redacted]");
    expect(scrub("Authorization: Basic dXNlcjpwYXNzd29yZA==")).toBe("Authorization: Basic [redacted]");
    expect(scrub("the bearer of bad news")).toBe("the bearer of bad news");
    expect(scrub("basic authentication failed")).toBe("basic authentication failed");
  });

  test("secret-sounding pairs keep the key", () => {
    expect(scrub("login password=hunter2 ok")).toBe("login password=[redacted] ok");
    expect(scrub("GET /cb?code=1&client_secret=abc123&x=1")).toBe("GET /cb?code=1&client_secret=[redacted]&x=1");
    expect(scrub('{"user":"a","password":"p@ss w0rd","api_key": "k-1"}')).toBe('{"user":"a","password":"[redacted]","api_key": "[redacted]"}');
    expect(scrub("DB_PASSWORD: s3cr3t")).toBe("DB_PASSWORD: [redacted]");
    expect(scrub("x-api-key=abcdef")).toBe("x-api-key=[redacted]");
    expect(scrub("token refreshed for session 42")).toBe("token refreshed for session 42");
  });

  test("emails and card numbers; ids and timestamps survive", () => {
    expect(scrub("signup from Jane.Doe+test@example.co.uk done")).toBe("signup from [email] done");
    expect(scrub("charged 4111 1111 1111 1111 for order 77")).toBe("charged [card] for order 77");
    expect(scrub("charged 5555-5555-5555-4444")).toBe("charged [card]");
    expect(scrub("ts=1767269700000 id=4111111111111112")).toBe("ts=1767269700000 id=4111111111111112");
    expect(scrub("ns 1767269700000000000")).toBe("ns 1767269700000000000");
    expect(scrub("plain line")).toBe("plain line");
  });
});
