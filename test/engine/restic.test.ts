// The engine conformance suite against a restic repository, driven through the real restic
// binary (the Debian package; the restic engine refuses to start without it).
import path from "node:path";
import { engineConformance } from "./conformance.js";

engineConformance("restic", (sb) => `restic:${path.join(sb.root, "restic-repo")}`);
