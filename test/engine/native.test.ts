// The engine conformance suite against pi-guard's own repository format.
import { engineConformance } from "./conformance.js";

engineConformance("native", (sb) => sb.repo);
